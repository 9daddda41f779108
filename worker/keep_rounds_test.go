package worker

import (
	"context"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// Issue 22's audit: a worker that keeps a lane for as long as it has vested
// jobs, ignoring the rotation after keepRounds claims that the fairness
// claims rest on, survived every suite. One claim goroutine holds a hot
// tenant's lane (300 jobs, one lane: the zone cannot grow); a tenant that
// enqueues one job meanwhile runs before the hot lane is drained.
//
// The clock stands still, so the rotation is counted in claims (a kept lane
// is also let go after a second of waiting for slots, which would rotate it
// by time). Per-job leases only: in short-job mode a retired lane's
// hand-back waits on the clock.
func TestZonesKeptLaneRotatesAfterKeepRounds(t *testing.T) {
	opts := zonesOptions()
	opts.ZoneLanes, opts.MaxZoneLanes = 1, 1
	e := newClockedEnv(t, opts)
	hot := make([]quick.NewJob, 300)
	for i := range hot {
		hot[i] = quick.NewJob{TaskType: "rot", ItemSpace: "hot"}
	}
	e.enqueue(hot...)
	var mu sync.Mutex
	hotRuns, coldAfter := 0, -1
	coldIn := make(chan struct{}) // the first hot job waits for the cold one
	w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
		if err := RegisterRaw(w, "rot", func(ctx context.Context, j *RawJob) error {
			mu.Lock()
			first := j.Lease.ItemSpace == "hot" && hotRuns == 0
			if j.Lease.ItemSpace == "hot" {
				hotRuns++
			} else if coldAfter < 0 {
				coldAfter = hotRuns
			}
			mu.Unlock()
			if first {
				<-coldIn
			}
			return nil
		}, HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.waitFor("the hot lane taken", func() bool { mu.Lock(); defer mu.Unlock(); return hotRuns > 0 })
	e.enqueue(quick.NewJob{TaskType: "rot", ItemSpace: "cold"})
	close(coldIn)
	e.waitFor("both tenants", func() bool { mu.Lock(); defer mu.Unlock(); return coldAfter >= 0 && hotRuns == len(hot) })
	// keepRounds claims of at most 2 jobs (Concurrency 1, and as many
	// prefetched) per hold, and at each hand-back at least an even chance
	// for the cold lane: about 18 hand-backs before the hot lane is
	// drained, the cold job waiting for all of them with a chance of
	// about 2^-18. A lane kept while it has vested jobs runs the cold job
	// only after the whole hot backlog.
	t.Logf("the cold job ran after %d hot jobs", coldAfter)
	if coldAfter >= len(hot) {
		t.Fatalf("the cold tenant's job ran after all %d of the hot tenant's: the hot lane was kept", len(hot))
	}
}
