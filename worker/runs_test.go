package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/quick"
)

// runLog records each run of a handler by its lease token.
type runLog struct {
	mu     sync.Mutex
	starts []uint64
	causes map[uint64]error
	ch     chan uint64
}

func newRunLog() *runLog { return &runLog{causes: map[uint64]error{}, ch: make(chan uint64, 16)} }

func (l *runLog) started(tok uint64) {
	l.mu.Lock()
	l.starts = append(l.starts, tok)
	l.mu.Unlock()
	l.ch <- tok
}

func (l *runLog) ended(tok uint64, cause error) {
	l.mu.Lock()
	l.causes[tok] = cause
	l.mu.Unlock()
}

func (l *runLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.starts)
}

func (l *runLog) cause(tok uint64) (error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.causes[tok]
	return c, ok
}

// A run is a lease, not a job ID: when a worker's renewal of a run could not
// happen before the lease lapsed and the worker's own claim took the job
// again, both runs are tracked. Each is renewed or cancelled on its own, the
// first one's cleanup leaves the second's entry, Running and the
// concurrency limit count both, and shutdown releases the one still running.
// Before runs were keyed by (ID, token), the second run replaced the first in
// the map: Running read 1 then 0, the second run was never renewed, and a
// third run started while it still ran.
func TestSameJobTwiceTrackedAsTwoRuns(t *testing.T) {
	e := newEnv(t, quick.Options{})
	const lease = 10 * time.Second
	log := newRunLog()
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "twice", func(ctx context.Context, j *RawJob) error {
			tok := leasetoken.Of(j.Lease)
			log.started(tok)
			<-ctx.Done()
			log.ended(tok, context.Cause(ctx))
			return context.Cause(ctx)
		}, HandlerOptions{Concurrency: 3, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	})
	id := e.enqueue(quick.NewJob{TaskType: "twice"})[0].ID
	h := e.start(w)
	var first uint64
	e.waitFor("the first run", func() bool {
		select {
		case first = <-log.ch:
			return true
		default:
			return false
		}
	})
	e.settle(w)
	r := w.byType["twice"]
	st1 := r.runningJobs()[0]

	// The first run's renewal cannot happen (its job state is held, as by a
	// handler stuck in a Checkpoint): the lease lapses and this worker's
	// claim takes the job again. The test holds it on purpose while the
	// clock moves (heldByTest: the worker counts as quiet meanwhile).
	w.keeper.heldByTest.Store(st1)
	st1.mu.Lock()
	// Past the lease and an idle claim loop's longest sleep (MaxIdleSleep).
	e.step(lease+7*time.Second, time.Second, w)
	// The claim is settled; its handler goroutine may not have logged yet.
	var second uint64
	e.waitFor("the lapsed job claimed again", func() bool {
		select {
		case second = <-log.ch:
			return true
		default:
			return false
		}
	})
	if second == first {
		st1.mu.Unlock()
		t.Fatalf("second run has the first run's token %d", first)
	}
	if got := w.Stats().Running; got != 2 {
		st1.mu.Unlock()
		t.Fatalf("Running = %d with two runs of the job in progress, want 2", got)
	}
	st1.mu.Unlock()
	e.step(time.Second, time.Second, w)

	// The first run's next renewal finds the token changed: only that run
	// is cancelled, and its cleanup leaves the second run tracked.
	e.waitFor("the first run to be cancelled", func() bool { _, ok := log.cause(first); return ok })
	if c, _ := log.cause(first); !errors.Is(c, quick.ErrLeaseLost) {
		t.Fatalf("first run ended with %v, want a lost lease", c)
	}
	e.waitFor("the first run's cleanup", func() bool { return w.Stats().Running == 1 })
	if got := r.runningJobs(); len(got) != 1 || leasetoken.Of(got[0].first) != second {
		t.Fatalf("running runs %v, want only the second", got)
	}

	// The second run is renewed on its own for three leases: nobody claims
	// the job a third time and the job stays leased by it.
	e.step(3*lease, time.Second, w)
	if n := log.count(); n != 2 {
		t.Fatalf("%d runs started, want 2 (a third run started while the second ran)", n)
	}
	if _, ended := log.cause(second); ended {
		t.Fatal("the second run was cancelled")
	}
	if info := e.get(id); info.State != quick.StateLeased || info.Holder != w.ID() || info.Attempt != 2 {
		t.Fatalf("job %+v: want leased by %s, attempt 2", info, w.ID())
	}

	// Shutdown cancels and releases the second run.
	if err := e.stop(w, h); err != nil {
		t.Fatal(err)
	}
	// The shutdown released the run; its handler returns on its own time.
	e.waitFor("the second run to end", func() bool { _, ok := log.cause(second); return ok })
	if c, _ := log.cause(second); !errors.Is(c, ErrShutdown) {
		t.Fatalf("second run ended with %v, want shutdown", c)
	}
	if s := w.Stats(); s.Released != 1 || s.LeaseLost != 1 {
		t.Fatalf("stats %+v: want one release and one lost lease", s)
	}
	if n := lanesLeased(t, e.q, "twice"); n != 0 {
		t.Fatalf("%d jobs still leased after shutdown", n)
	}
}
