package bench

import (
	"context"
	"math"
	"testing"
	"time"
)

// The idle simulation runs on a fake clock, so its counts are exact: a
// worker reads the same whatever the number of workers and tenants.
func TestScaleIdleCounts(t *testing.T) {
	ctx := context.Background()
	run := func(layout string, workers, tenants int) IdleResult {
		t.Helper()
		c := DefaultScaleIdle()
		c.Workers, c.Tenants, c.Sample, c.SimFor = workers, tenants, 0, 10*time.Second
		r, err := ScaleIdle(ctx, c, layout)
		if err != nil {
			t.Fatalf("%s/%d/%d: %v", layout, workers, tenants, err)
		}
		return r
	}
	// Past the 64 clock slots, a zones worker's reads do not grow with the
	// workers or the tenants.
	z1, z2 := run("zones", 70, 10), run("zones", 140, 200)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }
	p1, p2 := z1.PerWorkerSec, z2.PerWorkerSec
	// The tenant limits are read once a second per process and task type
	// (quick/limits.go), shared by the process's workers: that range read
	// per worker falls as the workers grow, and must never rise.
	if !near(p1.ReadVersions, p2.ReadVersions) || p2.RangeReads > p1.RangeReads+1e-9 || !near(p1.KeysRead, p2.KeysRead) || !near(p1.Reads, p2.Reads) {
		t.Errorf("zones idle cost changed with workers and tenants: %+v against %+v (range reads %.6f against %.6f)", z1.PerWorkerSec, z2.PerWorkerSec, p1.RangeReads, p2.RangeReads)
	}
	// One clock round and one claim per worker every 5 s; only the round
	// writes.
	if z1.PerWorkerSec.Commits != 0.2 {
		t.Errorf("zones commits/s = %v, want 0.2 (a clock round every 5 s)", z1.PerWorkerSec.Commits)
	}
	if _, err := ScaleIdle(ctx, DefaultScaleIdle(), "nope"); err == nil {
		t.Error("an unknown layout was accepted")
	}
}

// The claims sweep and the tenants run complete without errors or
// invariant violations on tiny inputs; nothing about speed is asserted.
func TestScaleClaimsAndTenantsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of real time")
	}
	ctx := context.Background()
	for _, layout := range []string{"zones"} {
		c := ScaleClaimsConfig{Workers: []int{3}, Tenants: 40, PerTenant: 2, Max: 4, RunFor: 300 * time.Millisecond, Seed: 1}
		rs, err := ScaleClaims(ctx, c, layout, t.Logf)
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if len(rs) != 1 || rs[0].Errors != 0 {
			t.Errorf("%s: %+v", layout, rs)
		}
	}
	tc := DefaultTenants()
	tc.Variants = []string{"zones", "zones-16"}
	tc.Workers, tc.Backlog, tc.Small, tc.SmallBatch, tc.Warmup, tc.Wait = 2, 200, 10, 5, 100*time.Millisecond, 10*time.Second
	tc.Duration = Dist{Kind: "fixed", Mean: time.Millisecond}
	rs, err := Tenants(ctx, MemEngine(1), tc, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Errors != 0 || len(r.Violations) > 0 || r.SmallWait.N+r.SmallUnstarted != tc.Small {
			t.Errorf("%s: %+v", r.Variant, r)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	busy, niced, ok := parseProcStatCPU("cpu  59446 37250 16008 32698 382 0 135 44 0 0")
	if !ok || busy != (59446+37250+16008+0+135+44)/100.0 || niced != 372.5 {
		t.Errorf("got %v %v %v", busy, niced, ok)
	}
	if busy, _, ok := parseProcStatCPU("cpu 100 0 100 5000 0 0 0"); !ok || busy != 2 {
		t.Errorf("no steal field: got %v %v", busy, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8", "cpu 1 2 3"} {
		if _, _, ok := parseProcStatCPU(bad); ok {
			t.Errorf("%q: parsed", bad)
		}
	}
}

// The workers sweep drains its whole backlog at each count and reports
// what it measured.
func TestScaleWorkersDrains(t *testing.T) {
	c := DefaultScaleWorkers()
	c.Workers, c.Jobs, c.Tenants, c.Concurrency = []int{1, 3}, 300, 7, 10
	rs, err := ScaleWorkers(context.Background(), c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		if r.Jobs != 300 || r.JobsPerSec <= 0 || r.CommitsPer <= 0 || r.ClaimsPer <= 0 {
			t.Errorf("result %+v", r)
		}
	}
	if _, err := ScaleWorkers(context.Background(), ScaleWorkersConfig{}, t.Logf); err == nil {
		t.Error("an empty configuration ran")
	}
}
