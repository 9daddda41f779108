package chaos

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The schedule runs in rounds, a Once fault in the first only, records a
// failed fault with no kills, and starts none after the chaos ends.
func TestRunFaultsRounds(t *testing.T) {
	var ran []string
	// The run ends after five faults (its context cancelled), not after a
	// wall-clock duration that a loaded machine may use up in three.
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	step := func(name string, err error) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			ran = append(ran, name)
			if len(ran) == 5 {
				stop()
			}
			return name + " done", err
		}
	}
	faults := []Fault{
		{Name: "a", Kills: 1, Do: step("a", nil)},
		{Name: "once", Kills: 7, Once: true, Do: step("once", nil)},
		{Name: "b", Kills: 1, Do: step("b", errors.New("broke"))},
	}
	cfg := Config{Duration: time.Minute}
	recs := runFaults(rctx, cfg, faults, time.Now(), func(string, ...any) {})
	if len(ran) != 5 || !slices.Equal(ran[:4], []string{"a", "once", "b", "a"}) {
		t.Fatalf("ran %v, want a, once, b, a, b", ran)
	}
	if n := len(slices.DeleteFunc(slices.Clone(ran), func(s string) bool { return s != "once" })); n != 1 {
		t.Errorf("the Once fault ran %d times", n)
	}
	for _, r := range recs {
		if r.Name == "b" && (r.Err != "broke" || r.Kills != 0) {
			t.Errorf("failed fault recorded as %+v", r)
		}
		if r.StartS > cfg.Duration.Seconds()+1 {
			t.Errorf("fault %s started at %.3fs, after the chaos ended", r.Name, r.StartS)
		}
	}
	// A run whose chaos has ended starts no fault.
	if recs := runFaults(context.Background(), Config{Duration: time.Minute}, faults, time.Now().Add(-2*time.Minute), func(string, ...any) {}); len(recs) != 0 {
		t.Errorf("after the end: %d faults ran", len(recs))
	}
	// No faults, or a cancelled run: nothing runs.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if recs := runFaults(ctx, Config{Duration: time.Second, Baseline: time.Second}, faults, time.Now(), func(string, ...any) {}); len(recs) != 0 {
		t.Errorf("cancelled: %d faults ran", len(recs))
	}
}
