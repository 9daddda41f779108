package quick_test

import (
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// A scan skips the lanes its consumer has already handed out
// (ClaimOptions.Skip): it neither takes one nor returns it as a candidate,
// so the worker's scanner never races its own executors for a lane; with
// every vested lane skipped it takes nothing, and the executor's claim of
// the lane is not missed.
func TestScanSkipsLanesHandedOut(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	res, cand := scanPair(t, e, "a", "b")
	if len(res.Jobs) != 1 {
		t.Fatalf("scan = %+v", res)
	}
	// The candidate is handed to an executor that has not claimed it yet:
	// a scan that skips it finds nothing else vested.
	again := e.zclaim(t, quick.ClaimOptions{Scan: 4, Holder: "scanner", Skip: []quick.LaneCandidate{cand}})
	if len(again.Jobs) != 0 || len(again.Candidates) != 0 || again.Missed {
		t.Fatalf("a scan skipping the only vested lane = %+v; want nothing", again)
	}
	// The executor's claim from the candidate is not missed.
	got := e.zclaim(t, quick.ClaimOptions{From: &cand, Holder: "executor", Max: 10})
	if got.Missed || len(got.Jobs) != 1 || got.Jobs[0].ItemSpace != cand.ItemSpace {
		t.Fatalf("claim from the skipped candidate = %+v", got)
	}

}
