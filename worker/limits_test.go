package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// Tenant limits under the worker runtime (quick/limitgate.go enforces
// them in the claim): three workers of 16 slots each drain a tenant held
// to 2 jobs at once beside unlimited tenants; the limited tenant never
// runs more than 2 at once, and every job completes (its parked lane is
// woken by the acks that free its slots).
func TestZonesTenantConcurrencyLimit(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("tenanted")
			}
			e := newClockedEnv(t, opts)
			if err := e.q.SetTenantLimits(e.ctx, "tenanted", "tenant-000", quick.Limits{Concurrency: 2}); err != nil {
				t.Fatal(err)
			}
			ids := e.enqueueTenants("tenanted", 4, 15)
			var mu sync.Mutex
			running, peak := 0, 0
			c := newRuns()
			h := func(ctx context.Context, j *RawJob) error {
				c.start(j.Lease.ID)
				if j.Lease.ItemSpace == "tenant-000" {
					mu.Lock()
					running++
					peak = max(peak, running)
					mu.Unlock()
					defer func() { mu.Lock(); running--; mu.Unlock() }()
				}
				c.finish(j.Lease.ID)
				return nil
			}
			ws := e.zonesWorkers(3, "tenanted", h, HandlerOptions{Concurrency: 16})
			for _, w := range ws {
				e.start(w)
			}
			e.drain("drain", func() bool {
				var n int64
				for _, w := range ws {
					n += w.Stats().Completed
				}
				return n == int64(len(ids))
			}, ws...)
			c.check(t, ids, true)
			mu.Lock()
			defer mu.Unlock()
			if peak > 2 {
				t.Fatalf("tenant-000 ran %d jobs at once, limit 2", peak)
			}
			for _, w := range ws {
				if err := w.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
