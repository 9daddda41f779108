package soak

import (
	"context"
	"os"
	"testing"
)

// TestShortSoak runs the CI soak (about 20 s): kills, 1021s both ways,
// conflicts, skewed clocks and paused handlers, and fails on any
// violation. It asserts that faults were in fact injected, never on time.
func TestShortSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s soak")
	}
	rep, err := Run(context.Background(), Short(), testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteSummary(os.Stderr)
	if rep.DrainTimedOut {
		t.Error("the drain timed out with jobs still queued")
	}
	for _, v := range rep.Verdict.Violations {
		t.Error(v)
	}
	if rep.Verdict.Jobs == 0 || rep.Kills == 0 || rep.Faults.UnknownCommitted == 0 || rep.Faults.UnknownNotCommitted == 0 || rep.Faults.Conflicts == 0 {
		t.Errorf("the soak did not exercise what it should: %+v", rep)
	}
	if rep.Verdict.CronCompleted == 0 {
		t.Error("no cron occurrence completed")
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}
