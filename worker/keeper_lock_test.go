package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A renewal that finds its job held (a handler in a Checkpoint, or the
// runner between the handler's return and its ack) waits for the job to be
// let go, not for the clock: the worker is not quiet meanwhile, and the
// release itself wakes the keeper, which renews at once.
//
// TestZonesStopReleasesPrefetched failed about once in a thousand runs
// because the keeper retried on a fake-clock timer (100 ms) while the
// runner goroutine holding the job was not scheduled: the worker read as
// quiet, the test's drain advanced the clock a second, the keeper woke,
// found the job still held and parked again, and the scheduler handed the
// processor back and forth between the two (each readies the other) until
// the lease had lapsed and the job was claimed and run a second time.
func TestKeeperWaitsForAHeldJobNotForTheClock(t *testing.T) {
	e := newEnv(t, quick.Options{})
	const lease = 30 * time.Second
	g := newGate()
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "held", func(ctx context.Context, j *RawJob) error {
			g.enter()
			<-ctx.Done()
			return ctx.Err()
		}, HandlerOptions{Concurrency: 1, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "held"})
	e.start(w)
	e.waitFor("the handler to start", func() bool { return g.count() == 1 })
	e.settle(w)
	r := w.byType["held"]
	st := r.runningJobs()[0]
	before := st.lease.Deadline

	// The renewal falls due while the job is held.
	st.mu.Lock()
	e.clk.Advance(lease - lease/3 + time.Second)
	// The keeper has woken, found the job held and gone back to sleep.
	e.waitFor("the keeper's round", func() bool { return w.keeper.loopState.asleep(e.clk.Now()) })
	if w.quiet() {
		st.mu.Unlock()
		t.Fatal("the worker reads as quiet while its keeper waits for a held job: a test would advance the clock past the lease")
	}
	st.mu.Unlock()

	// No clock advance: letting the job go is what wakes the keeper.
	e.settle(w)
	st.mu.Lock()
	after := st.lease.Deadline
	st.mu.Unlock()
	if !after.After(before) {
		t.Fatalf("lease deadline %v after the job was let go, want renewed past %v", after, before)
	}
}
