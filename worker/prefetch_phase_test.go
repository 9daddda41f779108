package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// Issue 22, item 4: a prefetched job whose lease the worker already knows
// is lost (cancelled, or its lane taken over) never has its handler
// started when a slot frees: the run would double one another worker owns.
func TestPrefetchedJobKnownLostNeverStarts(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("prefetched")
			}
			e := newClockedEnv(t, opts)
			e.enqueueTenants("prefetched", 1, 2)
			g := newGate()
			var mu sync.Mutex
			started := map[runKey]bool{}
			w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
				if err := RegisterRaw(w, "prefetched", func(ctx context.Context, j *RawJob) error {
					mu.Lock()
					started[keyOf(j.Lease)] = true
					first := len(started) == 1
					mu.Unlock()
					if first {
						g.enter()
						<-g.open // holds the only slot: the other job waits
					}
					return nil
				}, HandlerOptions{Concurrency: 1}); err != nil {
					t.Fatal(err)
				}
			})
			e.start(w)
			r := w.byType["prefetched"]
			var waiting *jobState
			e.waitFor("one running and one waiting", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				if g.count() == 1 && len(r.waiting) == 1 {
					waiting = r.waiting[0]
					return true
				}
				return false
			})
			// The keeper learns that the waiting job's lease is gone (it
			// was cancelled, or its lane taken over), as a failed renewal
			// records it.
			waiting.mu.Lock()
			waiting.loseLocked(fmt.Errorf("test: %w", quick.ErrLeaseLost))
			waiting.mu.Unlock()
			g.release()
			e.waitFor("the slot to free", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.active == 0 && len(r.waiting) == 0 && len(r.running) == 0
			})
			mu.Lock()
			defer mu.Unlock()
			// (In short-job mode the lane, handed back, may hand the job
			// out again: that is another run, under another lease.)
			if started[keyOf(waiting.first)] {
				t.Fatalf("the handler of job %s started under the lease known lost", waiting.first.ID)
			}
		})
	}
}

// A prefetched job whose per-job lease ended while it waited for a slot (its
// worker was frozen, or the keeper could not renew it) never starts under
// that lease: another worker may have taken it (found by the chaos run: a
// thawed worker ran a job another had completed).
func TestPrefetchedJobWithALapsedLeaseNeverStarts(t *testing.T) {
	e := newClockedEnv(t, zonesOptions())
	e.enqueueTenants("prefetched", 1, 2)
	g := newGate()
	var mu sync.Mutex
	started := map[runKey]bool{}
	w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
		if err := RegisterRaw(w, "prefetched", func(ctx context.Context, j *RawJob) error {
			mu.Lock()
			started[keyOf(j.Lease)] = true
			first := len(started) == 1
			mu.Unlock()
			if first {
				g.enter()
				<-g.open // holds the only slot: the other job waits
			}
			return nil
		}, HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	r := w.byType["prefetched"]
	var waiting *jobState
	e.waitFor("one running and one waiting", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if g.count() == 1 && len(r.waiting) == 1 {
			waiting = r.waiting[0]
			return true
		}
		return false
	})
	// The waiting job's lease ends unrenewed, as it does for a worker
	// frozen past it: the keeper stops (a round in flight ends first), so
	// nothing renews it, and its deadline is behind the worker's clock.
	w.keeper.stop()
	waiting.mu.Lock()
	lapsed := waiting.lease
	waiting.lease.Deadline = e.clk.Now()
	waiting.mu.Unlock()
	g.release()
	e.waitFor("the slot to free", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.active == 0 && len(r.waiting) == 0 && len(r.running) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if started[keyOf(lapsed)] {
		t.Fatalf("the handler of job %s started under a lease that had ended", lapsed.ID)
	}
}
