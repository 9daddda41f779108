package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func noopRaw(context.Context, *RawJob) error { return nil }

// A sleeping worker is woken by an enqueue: no clock advance is needed for
// the job to run.
func TestWakeOnEnqueue(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{MaxIdleSleep: time.Hour}, func(w *Worker) {
		if err := RegisterRaw(w, "wake", noopRaw, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.settle(w)
	// Steps shorter than the registry timeout, so the worker never finds its
	// own heartbeat stale and refuses to claim (it then sleeps unwatched).
	e.step(2*time.Minute, time.Second, w) // into long sleeps
	// Settled: the claim loop sleeps on a time ahead of the clock, which
	// the test no longer moves; only the watch can wake it now.
	e.enqueue(quick.NewJob{TaskType: "wake"})
	e.waitFor("the job to run without a clock advance", func() bool { return w.Stats().Completed == 1 })
	if w.Stats().Wakeups < 1 {
		t.Fatalf("stats %+v", w.Stats())
	}
	// A delayed job wakes nobody; it runs when it vests.
	e.settle(w)
	e.enqueue(quick.NewJob{TaskType: "wake", Delay: 30 * time.Second})
	e.settle(w)
	if w.Stats().Completed != 1 {
		t.Fatal("the delayed job ran early")
	}
}

// Enqueue writes to the wake key only while a worker sleeps on it, and only
// for a job that vests now.
func TestEnqueueWakesOnlySleepers(t *testing.T) {
	e := newEnv(t, quick.Options{})
	wakes := func() int64 {
		t.Helper()
		var n int64
		if err := e.raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
			v, err := tr.Get(wake.WakeKey(e.q.Root(), "sleepy")).Get()
			for i, c := range v {
				n |= int64(c) << (8 * i)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	enqueue := func(j quick.NewJob) int64 {
		t.Helper()
		before := wakes()
		if _, err := e.q.Enqueue(e.ctx, j); err != nil {
			t.Fatal(err)
		}
		return wakes() - before
	}
	enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour}) // registers the type
	if n := enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour}); n != 0 {
		t.Fatalf("a delayed enqueue without sleepers woke %d", n)
	}
	if n := enqueue(quick.NewJob{TaskType: "sleepy"}); n != 0 {
		t.Fatalf("a vested enqueue without sleepers woke %d", n)
	}

	w := e.newWorker(Config{MaxIdleSleep: time.Hour}, func(w *Worker) {
		if err := RegisterRaw(w, "sleepy", noopRaw, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.waitFor("the vested job", func() bool { return w.Stats().Completed == 1 })
	e.settle(w)
	e.step(time.Minute, 10*time.Second, w)
	if n := enqueue(quick.NewJob{TaskType: "sleepy"}); n != 1 {
		t.Fatalf("an enqueue with a sleeper woke %d, want 1", n)
	}
	e.waitFor("the woken worker", func() bool { return w.Stats().Completed == 2 })
	if n := enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour}); n != 0 {
		t.Fatalf("a delayed enqueue with a sleeper woke %d", n)
	}
	// A worker that dies asleep stops counting when its sleep would end.
	w.kill()
	e.clk.Advance(2 * time.Hour)
	if n := enqueue(quick.NewJob{TaskType: "sleepy"}); n != 0 {
		t.Fatalf("an enqueue after the sleeper died woke %d", n)
	}
}

// skewed is a worker clock running ahead of the others.
type skewed struct {
	*clock.Fake
	off time.Duration
}

func (s skewed) Now() time.Time { return s.Fake.Now().Add(s.off) }
