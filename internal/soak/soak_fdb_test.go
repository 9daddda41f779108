//go:build fdb

package soak

import (
	"context"
	"os"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
)

// TestShortSoakFDB runs the CI soak on a real FoundationDB (fdbtest: the
// cluster of FDB_CLUSTER_FILE or a throwaway server): the same kills,
// injected 1021/1031/1025s and conflicts over the real engine, whose own
// conflicts and latencies come on top. It fails on any violation.
func TestShortSoakFDB(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s soak")
	}
	db, sub := fdbtest.Open(t)
	rep, err := RunOn(context.Background(), db, sub, Short(), testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	rep.Engine = "FoundationDB (fdbtest)"
	rep.WriteSummary(os.Stderr)
	if rep.DrainStalled {
		t.Error("the drain stalled with jobs still queued")
	}
	for _, v := range rep.Verdict.Violations {
		t.Error(v)
	}
	if rep.Verdict.Jobs == 0 || rep.Kills == 0 || rep.Faults.UnknownCommitted == 0 {
		t.Errorf("the soak did not exercise what it should: %+v", rep)
	}
}

// TestShortSoakZonesFDB is TestShortSoakZones on a real FoundationDB:
// tenants, the pointer index, short-job lanes and lane resizing under the
// same faults, over the real engine's conflicts and latencies.
func TestShortSoakZonesFDB(t *testing.T) {
	if testing.Short() {
		t.Skip("25 s soak")
	}
	runShortSoakFDB(t, ShortZones())
}

func runShortSoakFDB(t *testing.T, c Config) Report {
	t.Helper()
	db, sub := fdbtest.Open(t)
	rep, err := RunOn(context.Background(), db, sub, c, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	rep.Engine = "FoundationDB (fdbtest)"
	checkShortSoak(t, rep) // prints the summary
	checkZonesSoak(t, rep)
	return rep
}
