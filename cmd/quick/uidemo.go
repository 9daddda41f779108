package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// The demo workload of `quick ui --demo`: the same job mix, tenants and
// handlers as `quick demo` (demoMix, demoHandler), a cron schedule, and
// workers, on the embedded engine; but instead of one batch that drains, it
// enqueues a steady trickle and a burst every so often, so the console
// always has something to show: a backlog that builds and drains, the hot
// tenant's zone growing its lanes under a burst, retries, dead letters, a
// cron chain.

type uiDemoConfig struct {
	Wave    time.Duration // period between bursts
	Jobs    int           // jobs per burst
	Rate    int           // jobs per second between bursts
	Workers int
	Logger  *slog.Logger
	// MeterProvider receives the workers' metrics (nil: none).
	MeterProvider metric.MeterProvider
	// Save is the snapshot file the queue is saved in every second, for
	// other commands' --snapshot ("": none); Stderr gets a failed save.
	Save   string
	Stderr io.Writer
}

type uiDemo struct {
	q    *quick.Queue
	ws   []*worker.Worker
	stop func()
}

func startUIDemo(ctx context.Context, cfg uiDemoConfig) (*uiDemo, error) {
	mem := memkv.Open(memkv.Options{Seed: 1})
	scale := func(d time.Duration) time.Duration { return d }
	q, err := quick.Open(ctx, mem, tuple.FromTuple(tuple.Tuple{"demo"}), demoQueueOptions(clock.Real(), cfg.Logger,
		func(attempt int) time.Duration { return time.Duration(attempt) * 300 * time.Millisecond }))
	if err != nil {
		mem.Close()
		return nil, err
	}
	if err := cron.Register(ctx, q, cron.Schedule{Name: demoCronName, Spec: "@every 2s", TaskType: demoCronType,
		Payload: []byte("rollup"), MissedRuns: cron.SkipAll}); err != nil {
		mem.Close()
		return nil, fmt.Errorf("register the demo's cron schedule: %w", err)
	}
	counts := newUIDemoCounts()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &uiDemo{q: q}
	never := &atomic.Bool{} // demoHandler's "killed" flag: no worker is killed here
	for i := range cfg.Workers {
		id := fmt.Sprintf("worker-%d", i+1)
		w, err := worker.New(worker.Config{Queue: q, ID: id, Logger: cfg.Logger, HeartbeatPeriod: 500 * time.Millisecond,
			ShutdownTimeout: 2 * time.Second, DefaultConcurrency: 2, MeterProvider: cfg.MeterProvider})
		if err != nil {
			cancel()
			mem.Close()
			return nil, err
		}
		for _, t := range demoTypes {
			if err := worker.RegisterRaw(w, t, demoHandler(t, id, counts, never, scale, clock.Real()), worker.HandlerOptions{Lease: quick.MinLease}); err != nil {
				cancel()
				mem.Close()
				return nil, err
			}
		}
		if err := cron.Handle(w, demoCronType, func(context.Context, cron.Occurrence) error { return nil },
			worker.HandlerOptions{Lease: quick.MinLease, Concurrency: 1}); err != nil {
			cancel()
			mem.Close()
			return nil, err
		}
		d.ws = append(d.ws, w)
	}
	var saver *snapshotSaver
	if cfg.Save != "" {
		saver = startSnapshotSaver(mem, cfg.Save, "quick ui --demo", "demo", clock.Real(), func(err error) {
			fmt.Fprintf(cfg.Stderr, "quick ui --demo: cannot save the queue for --snapshot (the demo goes on): %v\n", err)
		})
	}
	var wg sync.WaitGroup
	for _, w := range d.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(runCtx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// One pool of the demo's mix, cycled through: imports (the first
		// jobs of a mix) stay a few per pool, as in `quick demo`.
		rng := rand.New(rand.NewPCG(1, 0x9e3779b97f4a7c15))
		pool, _ := demoMix(rng, 400, scale)
		at := 0
		const tick = 500 * time.Millisecond
		next := time.Now()
		for {
			n := cfg.Rate / 2
			if now := time.Now(); !now.Before(next) {
				n += cfg.Jobs
				next = now.Add(cfg.Wave)
			}
			for n > 0 {
				k := min(n, 100, len(pool)-at) // one bounded transaction per 100 jobs
				if _, err := q.Enqueue(runCtx, pool[at:at+k]...); err != nil && runCtx.Err() == nil {
					cfg.Logger.Warn("quick ui --demo: enqueue", "err", err)
				}
				n -= k
				at = (at + k) % len(pool)
			}
			select {
			case <-runCtx.Done():
				return
			case <-time.After(tick):
			}
		}
	}()
	d.stop = func() {
		sctx, c := context.WithTimeout(context.Background(), 3*time.Second)
		for _, w := range d.ws {
			w.Stop(sctx)
		}
		c()
		cancel()
		waitTimeout(&wg, 3*time.Second)
		if saver != nil {
			saver.Stop()
		}
		mem.Close()
	}
	return d, nil
}

// newUIDemoCounts makes the handlers' tallies with every map demoHandler
// writes: a nil one panics in a handler while it holds the tallies' lock,
// and every handler after it blocks on that lock for good (the demo stalled
// so once, when checkpoints was missing).
func newUIDemoCounts() *demoCounts {
	return &demoCounts{running: map[string]map[quick.ID]bool{}, orphans: map[quick.ID]bool{}, checkpoints: map[string]int64{}}
}
