package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/quick"
)

// testhooks.ClaimedAt reports when the worker claimed a job, not when its
// handler started: a job prefetched while every handler slot is busy starts
// later, and the soak must date its lease by the claim (internal/harness/soak).
func TestClaimedAtIsTheClaimNotTheHandlerStart(t *testing.T) {
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
			claimed := map[quick.ID]time.Time{}
			started := map[quick.ID]time.Time{}
			w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
				if err := RegisterRaw(w, "prefetched", func(ctx context.Context, j *RawJob) error {
					mu.Lock()
					claimed[j.Lease.ID], started[j.Lease.ID] = testhooks.ClaimedAt(j), e.clk.Now()
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
			e.waitFor("one running and one waiting", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return g.count() == 1 && len(r.waiting) == 1
			})
			claimedAt := e.clk.Now()
			e.clk.Advance(time.Second)
			g.release()
			e.waitFor("both started", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(started) == 2
			})
			mu.Lock()
			defer mu.Unlock()
			for id, at := range claimed {
				if !at.Equal(claimedAt) {
					t.Errorf("job %s: ClaimedAt %v, want the claim's %v (handler started %v)", id, at, claimedAt, started[id])
				}
			}
		})
	}
}
