// Package ex is the plumbing the examples share, kept out of their mains:
// the command-line flags, opening the embedded engine or FoundationDB, the
// clock a smoke run uses, and printing.
//
// Without -cluster-file an example runs on the embedded engine (kv/memkv),
// producer and workers in one process, as a smoke run (-smoke=false: on
// the real clock). With -cluster-file (in a binary built with -tags fdb)
// it runs on FoundationDB, on the real clock unless -smoke is given.
//
// A smoke run uses a fake clock (clock.Fake) that this package moves ten
// times faster than real time, and that a scenario can jump forward (Pass,
// PassUntil) when it waits for something slow, such as a 10-second lease
// to lapse: the whole scenario takes a second or two. On the real clock
// Pass and PassUntil sleep instead, so the same scenario code shows real
// leases lapsing.
package ex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
	"github.com/quickfdb/quickfdb/workermain"
)

// Speed is how much faster than real time the smoke clock runs.
const Speed = 10

// Flags are an example's command-line flags: the worker binaries' flags
// (-cluster-file, -embedded, -subspace, -log-level...) and -smoke.
type Flags struct {
	workermain.Flags
	Smoke bool
}

// Register adds the flags to fs; name sets the default subspace
// (examples,<name>).
func (f *Flags) Register(fs *flag.FlagSet, name string) {
	// The examples are demos: the in-memory engine is their default.
	f.AllowEmbedded = true
	f.Flags.Register(fs)
	fs.BoolVar(&f.Smoke, "smoke", false, "run the scenario on a fast fake clock (the default without -cluster-file; -smoke=false there runs it on the real clock)")
	setDefault(fs, "subspace", "examples,"+name)
	setDefault(fs, "log-level", "warn") // error in a smoke run; see Parse
}

func setDefault(fs *flag.FlagSet, name, value string) {
	f := fs.Lookup(name)
	_ = f.Value.Set(value)
	f.DefValue = value
}

// Parse parses args into a new FlagSet made by add, which registers the
// example's own flags beside the common ones.
func Parse(name string, args []string, stderr io.Writer, add func(fs *flag.FlagSet)) (*Flags, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &Flags{}
	f.Register(fs, name)
	if add != nil {
		add(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.ClusterFile == "" {
		// Nothing outside this process can reach the embedded engine, so
		// the only thing to do with it is the scenario: a smoke run unless
		// -smoke=false asks for the real clock.
		f.Embedded = true
		f.Smoke = f.Smoke || !set["smoke"]
	}
	if f.Smoke && !set["log-level"] {
		// The smoke clock's jumps make the workers' heartbeats look stale
		// for a moment: they warn and refuse to claim until their next
		// beat, which the jump itself sets off.
		f.LogLevel = "error"
	}
	return f, nil
}

// Env is an open example: a database, a queue and a clock.
type Env struct {
	DB    kv.Database
	Queue *quick.Queue
	// App is the subspace of the example's own data, beside the queue's.
	App   tuple.Subspace
	Clock clock.Clock
	Log   *slog.Logger
	Smoke bool
	// Space is the subspace everything lives under: the -subspace flag's,
	// plus ("run", id) for a scenario on FoundationDB.
	Space tuple.Subspace

	out   io.Writer
	outMu sync.Mutex
	start time.Time
	fake  *clock.Fake
	stop  func()
	clear bool
}

// Open opens the database and the queue the flags name. A scenario
// (fresh=true) on FoundationDB gets a subspace of its own, cleared by
// Close, so runs never see each other's data; separate processes that
// must share a queue (fresh=false) use the -subspace flag's as it is.
// Output goes to out, logs to stderr.
func Open(ctx context.Context, f *Flags, fresh bool, out, stderr io.Writer) (*Env, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	db, space, err := f.Open()
	if err != nil {
		return nil, err
	}
	var fake *clock.Fake
	if f.Smoke {
		fake = clock.NewFake(time.Now().Truncate(time.Second))
		if f.Embedded {
			// The engine's versions follow the fake clock too: the
			// workers compare their clocks through read versions
			// (worker's clock check), and versions on real time would
			// read a fake clock running 10x as 10x ahead.
			if c, ok := db.(io.Closer); ok {
				_ = c.Close()
			}
			db = memkv.Open(memkv.Options{Clock: fake})
		}
	}
	e := &Env{DB: db, Smoke: f.Smoke, out: out, stop: func() {}}
	if fresh && !f.Embedded {
		var b [4]byte
		_, _ = rand.Read(b[:])
		space = space.Sub("run", hex.EncodeToString(b[:]))
		e.clear = true
	}
	e.Space, e.App = space, space.Sub("app")
	e.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	e.Clock = clock.Real()
	if f.Smoke {
		e.fake = fake
		e.Clock = e.fake
		e.stop = e.tick()
	}
	e.start = e.Clock.Now()
	opts := quick.Options{Clock: e.Clock, Logger: e.Log}
	if f.Lanes > 0 {
		opts.ZoneLanes = f.Lanes
	}
	e.Queue, err = quick.Open(ctx, db, space.Sub("queue"), opts)
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// tick moves the fake clock Speed times faster than real time until the
// returned function is called.
func (e *Env) tick() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				e.fake.Advance(Speed * time.Millisecond)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// Close stops the smoke clock, clears a scenario's subspace on
// FoundationDB, and closes the database.
func (e *Env) Close() {
	e.stop()
	if e.clear {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := e.DB.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(e.Space.Bytes()))
			return nil
		})
		if err != nil {
			e.Log.Warn("could not clear the scenario's subspace", "err", err)
		}
	}
	if c, ok := e.DB.(io.Closer); ok {
		_ = c.Close()
	}
}

// Printf prints one line, stamped with the time since Open on the
// example's clock.
func (e *Env) Printf(format string, args ...any) {
	e.outMu.Lock()
	defer e.outMu.Unlock()
	d := e.Clock.Now().Sub(e.start).Seconds()
	fmt.Fprintf(e.out, "[%6.1fs] %s\n", d, fmt.Sprintf(format, args...))
}

// Describe prints where the example runs.
func (e *Env) Describe(f *Flags) {
	where := "the embedded engine (in process)"
	if !f.Embedded {
		where = fmt.Sprintf("FoundationDB (cluster file %q), subspace %s", f.ClusterFile, e.Space)
	}
	clk := "the real clock"
	if e.Smoke {
		clk = fmt.Sprintf("a fake clock running %dx real time (times below are on it)", Speed)
	}
	e.Printf("running on %s, with %s", where, clk)
}

// NewWorker returns a worker on the example's queue and clock.
func (e *Env) NewWorker(id string) (*worker.Worker, error) {
	return worker.New(worker.Config{Queue: e.Queue, ID: id, Logger: e.Log})
}

// Running is a worker running in the background.
type Running struct {
	W    *worker.Worker
	done chan error
}

// Start runs w in the background.
func Start(w *worker.Worker) *Running {
	r := &Running{W: w, done: make(chan error, 1)}
	go func() { r.done <- w.Run(context.Background()) }()
	return r
}

// Stop stops the worker gracefully and returns Run's error.
func (r *Running) Stop(ctx context.Context) error {
	if err := r.W.Stop(ctx); err != nil {
		return err
	}
	return <-r.done
}

// Kill kills the worker as a crash would (no release, no ack, no
// goodbye) and waits until Run has returned.
func (r *Running) Kill() error {
	testhooks.KillWorker(r.W)
	if err := <-r.done; !errors.Is(err, worker.ErrKilled) {
		return fmt.Errorf("killed worker %s returned %v, want %v", r.W.ID(), err, worker.ErrKilled)
	}
	return nil
}

// Abort kills the worker if it still runs, without waiting for Run: the
// deferred cleanup of a scenario's error paths. A no-op once the worker
// stopped or was killed.
func (r *Running) Abort() { testhooks.KillWorker(r.W) }

// Pass lets d pass: on the fake clock at once, on the real clock by
// sleeping.
func (e *Env) Pass(ctx context.Context, d time.Duration) error {
	return e.PassUntil(ctx, e.Clock.Now().Add(d))
}

// PassUntil lets the clock reach t.
func (e *Env) PassUntil(ctx context.Context, t time.Time) error {
	if e.fake != nil {
		e.fake.Set(t)
		return nil
	}
	select {
	case <-time.After(time.Until(t)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitFor polls cond until it holds, and fails after a while (a few
// seconds of real time on the fake clock, a minute on the real one).
func (e *Env) WaitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	limit := time.Minute
	if e.Smoke {
		limit = 15 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", limit, what)
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// JobsGone reports whether every job of ids has left the queue: completed
// (or never committed).
func (e *Env) JobsGone(ctx context.Context, ids ...quick.ID) (bool, error) {
	for _, id := range ids {
		info, err := e.Queue.Get(ctx, id)
		switch {
		case quick.IsNotFound(err):
		case err != nil:
			return false, err
		case info.State == quick.StateDead:
			return false, fmt.Errorf("job %s was dead-lettered: %s", id, info.LastError)
		case info.State != quick.StateFinished:
			return false, nil
		}
	}
	return true, nil
}

// Check returns an error naming a violated expectation, or nil.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("expectation failed: "+format, args...)
}

// Main runs an example's run function with the process's arguments, until
// SIGINT or SIGTERM, and exits non-zero, with the error, when it fails.
func Main(run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
		}
		os.Exit(1)
	}
}

// Short is the last 8 hex digits of a job ID, enough to tell the jobs of
// an example apart (the first ones are a timestamp, alike for all).
func Short(id quick.ID) string {
	s := id.String()
	return s[len(s)-8:]
}

// Stamp formats t as Printf stamps its lines: the time since Open.
func (e *Env) Stamp(t time.Time) string {
	return fmt.Sprintf("%.1fs", t.Sub(e.start).Seconds())
}
