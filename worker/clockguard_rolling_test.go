package worker

import (
	"strings"
	"testing"
	"time"
)

// Issue 22, "The clock guard stands a worker by on a rolling start": a fleet
// whose clocks all fit within twice the guard's limit (here ±2 s, the limit
// being an eighth of a 30 s lease, 3.75 s) has every clock within the limit
// of its middle and must never stand a worker by, whatever order its
// workers join in. With the median of the clocks seen so far as the
// reference, the +2 s worker joining after the −2 s one alone stood by (4 s
// off the senior clock) and, needing three quarters of the limit to come
// back, stayed out while the median of those seen was 3.5 s behind it.
func TestRollingStartWithinToleranceNeverStandsBy(t *testing.T) {
	clocks := map[string]time.Duration{"a": -2 * time.Second, "b": -1500 * time.Millisecond, "c": -900 * time.Millisecond, "d": 2 * time.Second}
	for _, order := range []string{"abcd", "adbc", "dabc", "dcba"} {
		t.Run(order, func(t *testing.T) {
			opts := zonesOptions()
			opts.LaneLeaseTime = 30 * time.Second
			e := newClockedEnv(t, opts)
			var fleet []*Worker
			check := func(when string) {
				t.Helper()
				for _, w := range fleet {
					if known, standby := w.zclock.state(); known && standby {
						off, bound, n := w.zclock.Offset()
						t.Fatalf("%s: worker %s stands by (offset %v, bound %v, %d samples, limit %v): the fleet is within tolerance",
							when, w.ID(), off, bound, n, clockLimit(e.q, w.snapshotRunners()))
					}
				}
			}
			for _, id := range strings.Split(order, "") {
				w := e.newWorker(Config{ID: id, Clock: skewed{e.clk, clocks[id]}}, func(w *Worker) {
					if err := RegisterRaw(w, "skew", noopRaw, HandlerOptions{Lease: 30 * time.Second}); err != nil {
						t.Fatal(err)
					}
				})
				fleet = append(fleet, w)
				e.start(w)
				e.waitFor("the first clock round of "+id, func() bool {
					known, _ := w.zclock.state()
					return known
				})
				check(id + " joined")
				// A few rounds between joins, as a rolling start has.
				for range 3 {
					e.step(clockPeriods*time.Second, time.Second, fleet...)
					check("after " + id + " joined")
				}
			}
			if got := clockLimit(e.q, fleet[0].snapshotRunners()); got != 3750*time.Millisecond {
				t.Fatalf("the guard's limit is %v, want 3.75s (an eighth of 30 s)", got)
			}
		})
	}
}
