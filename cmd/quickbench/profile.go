package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// profileFlags are the Go profiles a run can write, for finding where its
// time goes (go tool pprof, go tool trace).
type profileFlags struct {
	cpu, mem, mutex, block, trace string
}

func (p *profileFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&p.mem, "memprofile", "", "write an allocation profile (allocs) of the run to this file")
	fs.StringVar(&p.mutex, "mutexprofile", "", "write a mutex contention profile (every event sampled) to this file")
	fs.StringVar(&p.block, "blockprofile", "", "write a blocking profile (every event sampled) to this file")
	fs.StringVar(&p.trace, "trace", "", "write an execution trace of the run to this file")
}

// start starts the profiles asked for; stop ends them and writes them.
func (p *profileFlags) start() (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	create := func(name string, f func(*os.File) error) error {
		out, err := os.Create(name)
		if err != nil {
			return err
		}
		if err := f(out); err != nil {
			out.Close()
			return err
		}
		return nil
	}
	if p.cpu != "" {
		err := create(p.cpu, func(f *os.File) error {
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
			return nil
		})
		if err != nil {
			return stop, fmt.Errorf("cpuprofile: %w", err)
		}
	}
	if p.trace != "" {
		err := create(p.trace, func(f *os.File) error {
			if err := trace.Start(f); err != nil {
				return err
			}
			stops = append(stops, func() error { trace.Stop(); return f.Close() })
			return nil
		})
		if err != nil {
			return stop, errors.Join(fmt.Errorf("trace: %w", err), stop())
		}
	}
	for _, l := range []struct {
		file, name string
		on, off    func()
	}{
		{p.mutex, "mutex", func() { runtime.SetMutexProfileFraction(1) }, func() { runtime.SetMutexProfileFraction(0) }},
		{p.block, "block", func() { runtime.SetBlockProfileRate(1) }, func() { runtime.SetBlockProfileRate(0) }},
		{p.mem, "allocs", func() {}, func() {}},
	} {
		if l.file == "" {
			continue
		}
		l.on()
		stops = append(stops, func() error {
			defer l.off()
			f, err := os.Create(l.file)
			if err != nil {
				return fmt.Errorf("%sprofile: %w", l.name, err)
			}
			if err := pprof.Lookup(l.name).WriteTo(f, 0); err != nil {
				f.Close()
				return fmt.Errorf("%sprofile: %w", l.name, err)
			}
			return f.Close()
		})
	}
	return stop, nil
}
