package worker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

func TestMain(m *testing.M) { fdbtest.Main(m) }

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// waitLimit bounds every wait on a condition. It is a failure deadline,
// never a measured duration: conditions normally hold within milliseconds.
const waitLimit = 20 * time.Second

type env struct {
	t     testing.TB
	raw   kv.Database
	space tuple.Subspace
	db    *kv.CountedDB
	clk   *clock.Fake
	q     *quick.Queue
	ctx   context.Context
}

func testLogger() *slog.Logger {
	if os.Getenv("WORKER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newEnv(t testing.TB, opts quick.Options) *env {
	t.Helper()
	raw, space := fdbtest.Open(t)
	return newEnvOn(t, raw, space, opts)
}

// newEnvOn is newEnv over a given database, e.g. memkv with FDB's latencies.
func newEnvOn(t testing.TB, raw kv.Database, space tuple.Subspace, opts quick.Options) *env {
	t.Helper()
	return newEnvWith(t, raw, space, clock.NewFake(epoch), opts)
}

// newClockedEnv is newEnv on a private memkv database whose engine clock is
// the test's fake clock: read versions advance with the test's time, as a
// cluster's advance with real time, so workers compare clocks through them.
func newClockedEnv(t testing.TB, opts quick.Options) *env {
	t.Helper()
	clk := clock.NewFake(epoch)
	raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk})
	return newEnvWith(t, raw, space, clk, opts)
}

func newEnvWith(t testing.TB, raw kv.Database, space tuple.Subspace, clk *clock.Fake, opts quick.Options) *env {
	t.Helper()
	db := kv.WithCounters(raw)
	opts.Clock = clk
	opts.Logger = testLogger()
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
	}
	ctx := context.Background()
	q, err := quick.Open(ctx, db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, raw: raw, space: space, db: db, clk: clk, q: q, ctx: ctx}
}

// newWorker builds a worker on the env's queue; setup registers handlers.
func (e *env) newWorker(cfg Config, setup func(w *Worker)) *Worker {
	e.t.Helper()
	cfg.Queue = e.q
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	setup(w)
	return w
}

// start runs w until the test ends (stopping it gracefully then, or killing
// it if that does not finish) and waits until it is idle.
func (e *env) start(w *Worker) *runHandle {
	e.t.Helper()
	h := &runHandle{done: make(chan struct{})}
	go func() {
		h.err = w.Run(context.Background())
		close(h.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-h.done:
			return
		default:
		}
		w.kill()
		<-h.done
	})
	return h
}

type runHandle struct {
	done chan struct{}
	err  error
}

// waitFor waits until cond holds, checking after every clock sleeper
// registration and every few milliseconds; it fails the test after
// waitLimit of real time.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-e.clk.Changed():
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// settle waits until every given worker's loops are asleep on times ahead
// of the fake clock (or on no time), i.e. only an advance moves them.
func (e *env) settle(ws ...*Worker) {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		quiet := true
		for _, w := range ws {
			quiet = quiet && w.quiet()
		}
		if quiet {
			return
		}
		if time.Now().After(deadline) {
			// Say what is not quiet: which loop, or what is pending.
			var why []string
			for _, w := range ws {
				why = append(why, w.ID()+": "+w.notQuiet())
			}
			e.t.Fatalf("timed out waiting for workers to settle (fake time %s): %s", e.clk.Now().UTC().Format("15:04:05.000"), strings.Join(why, "; "))
		}
		select {
		case <-e.clk.Changed():
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// step advances the fake clock in increments of at most inc up to d,
// letting the workers settle after each.
func (e *env) step(d, inc time.Duration, ws ...*Worker) {
	e.t.Helper()
	for d > 0 {
		s := min(d, inc)
		e.clk.Advance(s)
		d -= s
		e.settle(ws...)
	}
}

func (e *env) enqueue(jobs ...quick.NewJob) []quick.Enqueued {
	e.t.Helper()
	res, err := e.q.Enqueue(e.ctx, jobs...)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) get(id quick.ID) quick.JobInfo {
	e.t.Helper()
	info, err := e.q.Get(e.ctx, id)
	if quick.IsNotFound(err) {
		// A completed job leaves no key behind (only a waitable one
		// leaves its outcome).
		return quick.JobInfo{ID: id, State: quick.StateFinished}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

// stop stops w gracefully, advancing the fake clock (so ShutdownTimeout can
// pass) until it has returned.
func (e *env) stop(w *Worker, h *runHandle) error {
	e.t.Helper()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	deadline := time.Now().Add(waitLimit)
	for {
		select {
		case err := <-stopped:
			<-h.done
			return err
		case <-e.clk.Changed():
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatal("timed out waiting for the worker to stop")
		}
		e.clk.Advance(time.Second)
	}
}

// gate is a handler helper: it counts starts and blocks them until opened.
type gate struct {
	mu      sync.Mutex
	started int
	ch      chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{}, 1000), open: make(chan struct{})} }

func (g *gate) enter() {
	g.mu.Lock()
	g.started++
	g.mu.Unlock()
	g.ch <- struct{}{}
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

type emailArgs struct {
	To string `json:"to"`
}

func (emailArgs) Kind() string { return "email" }

func lanesLeased(t testing.TB, q *quick.Queue, taskType string) int {
	t.Helper()
	d, err := q.Depth(context.Background(), quick.DepthOptions{TaskType: taskType})
	if err != nil {
		t.Fatal(err)
	}
	return d.Leased
}

// jobsOf lists the task type's queued jobs, in every zone (quick's listing
// for quicktest, through the pointer index).
func jobsOf(t testing.TB, q *quick.Queue, taskType string) []quick.JobInfo {
	t.Helper()
	list := testhook.JobsTx.(func(kv.ReadTransaction, *quick.Queue, string, int) ([]quick.JobInfo, bool, error))
	var js []quick.JobInfo
	err := q.DB().ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		js, _, err = list(tr, q, taskType, 10_000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return js
}
