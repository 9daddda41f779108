package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func noopRaw(context.Context, *RawJob) error { return nil }

// An idle worker's database traffic is bounded: over simulated minutes it
// polls about once per MaxIdleSleep, plus its heartbeat.
func TestIdleWorkerReadsBounded(t *testing.T) {
	for _, wake := range []bool{true, false} {
		name := "wake"
		if !wake {
			name = "poll-only"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, quick.Options{})
			w := e.newWorker(Config{DisableWake: !wake}, func(w *Worker) {
				if err := RegisterRaw(w, "idle", noopRaw, HandlerOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			e.start(w)
			e.settle(w)
			e.step(time.Minute, time.Second, w) // past the backoff ramp
			before, sBefore := e.db.Stats(), w.Stats()
			const secs = 300
			e.step(secs*time.Second, time.Second, w)
			d, s := e.db.Stats().Sub(before), w.Stats()
			claims := s.EmptyClaims - sBefore.EmptyClaims
			per := func(v int64) float64 { return float64(v) / secs }
			t.Logf("idle worker, %d lanes, over %d simulated s: per second grv=%.2f reads=%.2f range_reads=%.2f keys_read=%.2f mutations=%.2f commits=%.2f; claims=%d (%.2f/s); watches=%d",
				e.q.Lanes(), secs, per(d.ReadVersions), per(d.Reads), per(d.RangeReads), per(d.KeysRead), per(d.Mutations), per(d.Commits), claims, per(claims), d.Watches)
			// MaxIdleSleep 5 s less a fifth of jitter: a claim every 4-5 s.
			if claims > secs/4+2 || claims < secs/5-2 {
				t.Fatalf("%d claims in %d s, want one every 4-5 s", claims, secs)
			}
			// Per second: one heartbeat (1 GRV) and at most one claim and one
			// sleep registration per 4 s (a GRV each).
			if g := per(d.ReadVersions); g > 1.6 {
				t.Fatalf("%.2f read versions a second", g)
			}
			if wake && d.Watches > 2 {
				t.Fatalf("%d watches armed while nothing was enqueued: the watch should stay armed", d.Watches)
			}
		})
	}
}

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

// Enqueue writes to the wake key only while a worker sleeps on it.
func TestEnqueueWakesOnlySleepers(t *testing.T) {
	e := newEnv(t, quick.Options{})
	// A second handle on the queue whose counters see only the enqueues.
	cdb := kv.WithCounters(e.raw)
	q2, err := quick.Open(e.ctx, cdb, e.space, quick.Options{Clock: e.clk, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(j quick.NewJob) kv.Stats {
		t.Helper()
		before := cdb.Stats()
		if _, err := q2.Enqueue(e.ctx, j); err != nil {
			t.Fatal(err)
		}
		return cdb.Stats().Sub(before)
	}
	enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour}) // registers the type
	idle := enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour})
	nobody := enqueue(quick.NewJob{TaskType: "sleepy"})
	t.Logf("no sleeper: delayed job %v; vested job %v", idle, nobody)
	if idle.Mutations != 3 || nobody.Mutations != 3 {
		t.Fatalf("mutations per enqueue without sleepers: %d and %d, want 3 (schedule key, record, marker)", idle.Mutations, nobody.Mutations)
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
	asleep := enqueue(quick.NewJob{TaskType: "sleepy"})
	e.waitFor("the woken worker", func() bool { return w.Stats().Completed == 2 })
	delayed := enqueue(quick.NewJob{TaskType: "sleepy", Delay: time.Hour})
	t.Logf("sleeper: vested job %v; delayed job %v", asleep, delayed)
	if asleep.Mutations != 4 {
		t.Fatalf("enqueue with a sleeper: %d mutations, want 4 (one wake-up)", asleep.Mutations)
	}
	if delayed.Mutations != 3 {
		t.Fatalf("delayed enqueue with a sleeper: %d mutations, want 3", delayed.Mutations)
	}
	// A worker that dies asleep stops counting when its sleep would end.
	w.kill()
	e.clk.Advance(2 * time.Hour)
	if late := enqueue(quick.NewJob{TaskType: "sleepy"}); late.Mutations != 3 {
		t.Fatalf("enqueue after the sleeper died: %d mutations, want 3", late.Mutations)
	}
}

// skewed is a worker clock running ahead of the others.
type skewed struct {
	*clock.Fake
	off time.Duration
}

func (s skewed) Now() time.Time { return s.Fake.Now().Add(s.off) }

// A worker whose clock is off the reference (here the worker that joined
// first) by more than an eighth of its lease refuses to claim.
func TestRefuseToClaimUnderClockSkew(t *testing.T) {
	e := newEnv(t, quick.Options{})
	mk := func(clk clock.Clock) *Worker {
		return e.newWorker(Config{Clock: clk}, func(w *Worker) {
			if err := RegisterRaw(w, "skew", noopRaw, HandlerOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := mk(nil), mk(skewed{e.clk, 20 * time.Second})
	e.start(a)
	e.waitFor("a to join", func() bool { return !a.byType["skew"].tracker.LastBeat().IsZero() })
	e.start(b)
	e.settle(a, b)
	e.step(5*time.Second, time.Second, a, b)
	rb := b.byType["skew"]
	if off, ok := rb.tracker.ClockOffset(); !ok || off < 15*time.Second {
		t.Fatalf("offset %v (ok %v), want about 20s", off, ok)
	}
	if got := rb.refuse(); got != refuseSkew {
		t.Fatalf("refusal %q, want clock skew", got)
	}
	refused := b.Stats().Refused
	claims := b.Stats().EmptyClaims + b.Stats().ClaimBatches
	e.step(10*time.Second, time.Second, a, b)
	if s := b.Stats(); s.Refused <= refused || s.EmptyClaims+s.ClaimBatches != claims {
		t.Fatalf("skewed worker stats %+v: want refusals and no claim", s)
	}
}
