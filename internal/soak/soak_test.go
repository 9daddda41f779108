package soak

import (
	"context"
	"os"
	"testing"
)

// TestShortSoak runs the CI soak (about 20 s): kills, 1021s both ways,
// conflicts, skewed clocks, paused handlers, large payloads, exhausted
// jobs and cron chains edited while they run, and fails on any violation.
// It asserts that every kind of fault was in fact injected, never on time.
func TestShortSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s soak")
	}
	rep, err := Run(context.Background(), Short(), testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteSummary(os.Stderr)
	if rep.DrainStalled {
		t.Error("the drain stalled with jobs still queued")
	}
	for _, v := range rep.Verdict.Violations {
		t.Error(v)
	}
	v := rep.Verdict
	for what, n := range map[string]int64{
		"jobs checked":            int64(v.Jobs),
		"kills":                   rep.Kills,
		"pauses past the lease":   rep.Pauses,
		"exhausting runs":         rep.ExhaustPauses,
		"jobs exhausted by claim": int64(v.Exhausted),
		"large jobs":              int64(v.Large),
		"cron edits":              rep.CronEdits,
		"1021 committed":          rep.Faults.UnknownCommitted,
		"1021 not committed":      rep.Faults.UnknownNotCommitted,
		"injected conflicts":      rep.Faults.Conflicts,
		"1031 in commit":          rep.Faults.TimedOutCommitted + rep.Faults.TimedOutNotCommitted,
		"1025 in commit":          rep.Faults.CancelledCommitted + rep.Faults.CancelledNotCommitted,
		"cron completions":        int64(v.CronCompleted),
		"cron dead-letters":       int64(v.CronDeadLettered),
	} {
		if n == 0 {
			t.Errorf("the soak did not exercise what it should: no %s (%+v)", what, rep)
		}
	}
	if rep.NaturalConfl < 0 {
		t.Errorf("negative count of real conflicts: %d", rep.NaturalConfl)
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}
