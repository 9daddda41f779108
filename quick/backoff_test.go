package quick

import (
	"testing"
	"time"
)

// The default backoff doubles from 1 s and stops at 10 minutes; each delay
// lies in [ceiling/2, ceiling].
func TestDefaultBackoffCapped(t *testing.T) {
	want := map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 7: 64 * time.Second,
		10: 512 * time.Second, 11: MaxDefaultBackoff, 25: MaxDefaultBackoff, 1000: MaxDefaultBackoff}
	for attempt, ceil := range want {
		if got := backoffCeiling(attempt); got != ceil {
			t.Errorf("ceiling(%d) = %v, want %v", attempt, got, ceil)
		}
		for range 200 {
			if d := DefaultBackoff(attempt); d < ceil/2 || d > ceil {
				t.Fatalf("DefaultBackoff(%d) = %v, outside [%v, %v]", attempt, d, ceil/2, ceil)
			}
		}
	}
	// The bound the docs quote: a job failing since the start of a 90 s
	// outage is retried at most 64 s after it ends.
	var at time.Duration
	attempt := 1
	for ; at <= 90*time.Second; attempt++ {
		at += backoffCeiling(attempt)
	}
	if after := at - 90*time.Second; after > 64*time.Second {
		t.Fatalf("retried %v after a 90 s outage", after)
	}
}
