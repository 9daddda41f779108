package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// limitHistory is a clean history of tenant "t1" under a concurrency limit
// of 2: three runs, never more than two at once, the third starting as the
// first ends; and a fourth run by worker w9, which froze while it ran.
func limitHistory() (History, time.Time) {
	t0 := time.Unix(1_900_000_000, 0)
	ids := []quick.ID{quick.NewID(t0), quick.NewID(t0), quick.NewID(t0), quick.NewID(t0)}
	h := History{
		Limits: []LimitChange{{Tenant: "t1", Concurrency: 2, From: t0.Add(-time.Minute), To: t0.Add(-time.Minute)}},
		Kills:  map[string]time.Time{},
	}
	for i, id := range ids {
		h.Jobs = append(h.Jobs, JobRec{ID: id, Kind: KindNormal, Seq: i, TaskType: workType, Tenant: "t1"})
		tok := uint64(i + 1)
		w := "w1"
		if i == 3 {
			w = "w9"
		}
		h.Claims = append(h.Claims, ClaimRec{ID: id, Token: tok, Attempt: 1, Worker: w, Claimed: t0})
		h.Completions = append(h.Completions, CompletionRec{ID: id, Token: tok, Attempt: 1, Worker: w})
	}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h.Runs = []RunRec{
		{ID: ids[0], Token: 1, Worker: "w1", Start: at(0), End: at(2), Claimed: t0},
		{ID: ids[1], Token: 2, Worker: "w1", Start: at(1), End: at(3), Claimed: t0},
		{ID: ids[2], Token: 3, Worker: "w1", Start: at(2), End: at(4), Claimed: t0},
		// w9 froze at 0.5 s: its run counts no more from then on.
		{ID: ids[3], Token: 4, Worker: "w9", Start: at(0), End: at(5), Claimed: t0},
	}
	h.Freezes = []Freeze{{Worker: "w9", From: at(0.5), To: at(4.5)}}
	return h, t0
}

func TestCheckLimitsHeld(t *testing.T) {
	h, _ := limitHistory()
	v := Check(h)
	if len(v.Violations) != 0 {
		t.Fatalf("violations: %v", v.Violations)
	}
	if v.LimitMax["L=2"] != 2 || v.LimitMaxAll["L=2"] != 3 || v.LimitLapsed != 1 || v.LimitRuns != 4 {
		t.Fatalf("max %v, with lapsed %v, lapsed %d, runs %d; want 2, 3, 1, 4", v.LimitMax, v.LimitMaxAll, v.LimitLapsed, v.LimitRuns)
	}
}

func TestCheckLimitsExceeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(h *History, t0 time.Time)
	}{
		{"three at once", func(h *History, t0 time.Time) { h.Runs[2].Start = t0.Add(1500 * time.Millisecond) }},
		{"no freeze to excuse the fourth", func(h *History, _ time.Time) { h.Freezes = nil }},
		{"a limit of 1 in force since long before", func(h *History, t0 time.Time) {
			h.Limits = append(h.Limits, LimitChange{Tenant: "t1", Concurrency: 1, From: t0.Add(-30 * time.Second), To: t0.Add(-30 * time.Second)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, t0 := limitHistory()
			tc.plant(&h, t0)
			v := Check(h)
			if !hasViolation(v, "ran at once") {
				t.Fatalf("no limit violation found: %v", v.Violations)
			}
		})
	}
}

// A claim made just after a change from 5 to 1 may still have obeyed 5.
func TestCheckLimitsChangeInFlight(t *testing.T) {
	h, t0 := limitHistory()
	h.Freezes = nil
	h.Limits = []LimitChange{
		{Tenant: "t1", Concurrency: 5, From: t0.Add(-time.Minute), To: t0.Add(-time.Minute)},
		{Tenant: "t1", Concurrency: 1, From: t0.Add(-time.Second), To: t0.Add(-time.Second)},
	}
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("violations within the change's slack: %v", v.Violations)
	}
	for i := range h.Runs {
		h.Runs[i].Claimed = t0.Add(time.Minute) // long after the change
		h.Runs[i].Start = h.Runs[i].Start.Add(time.Minute)
		h.Runs[i].End = h.Runs[i].End.Add(time.Minute)
	}
	if v := Check(h); !hasViolation(v, "ran at once") {
		t.Fatalf("no violation long after the change: %v", v.Violations)
	}
}

func TestCheckRate(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	h := History{Limits: []LimitChange{{Tenant: "t5", Rate: 2, Burst: 2, From: t0.Add(-time.Minute), To: t0.Add(-time.Minute)}}}
	for i := range 5 {
		id := quick.NewID(t0)
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond) // 2 a second: the rate
		h.Jobs = append(h.Jobs, JobRec{ID: id, Kind: KindNormal, Seq: i, TaskType: workType, Tenant: "t5"})
		h.Claims = append(h.Claims, ClaimRec{ID: id, Token: 1, Attempt: 1, Worker: "w1", Claimed: at})
		h.Runs = append(h.Runs, RunRec{ID: id, Token: 1, Worker: "w1", Start: at, End: at, Claimed: at})
		h.Completions = append(h.Completions, CompletionRec{ID: id, Token: 1, Attempt: 1, Worker: "w1"})
	}
	if v := Check(h); len(v.Violations) != 0 || v.RateClaims != 5 {
		t.Fatalf("at the rate: %d claims, violations %v", v.RateClaims, v.Violations)
	}
	for i := range h.Claims {
		h.Claims[i].Claimed = t0.Add(time.Duration(i) * 10 * time.Millisecond) // 5 at once, burst 2
	}
	if v := Check(h); !hasViolation(v, "starts in") {
		t.Fatalf("5 starts at once under a burst of 2: %v", v.Violations)
	}
}

// A prefetched job cancelled: gone with no completion is clean; a
// completion or a stored copy is a violation; a start under a lease known
// lost is one.
func TestCheckCancelledAndKnownLost(t *testing.T) {
	base := func() History {
		h := cleanHistory()
		t0 := time.Unix(1_900_000_000, 0)
		id := quick.NewID(t0)
		h.Jobs = append(h.Jobs, JobRec{ID: id, Kind: KindHold, Producer: holdProducerID, TaskType: prefetchType})
		h.Claims = append(h.Claims, ClaimRec{ID: id, Token: 9, Attempt: 1, Worker: "w1"})
		h.Cancels = []CancelRec{{ID: id, At: t0}}
		return h
	}
	if v := Check(base()); len(v.Violations) != 0 || v.Cancelled != 1 || v.CancelledUnrun != 1 {
		t.Fatalf("clean cancel: %+v", v)
	}
	h := base()
	h.Completions = append(h.Completions, CompletionRec{ID: h.Cancels[0].ID, Token: 9, Attempt: 1, Worker: "w1"})
	if v := Check(h); !hasViolation(v, "cancelled while prefetched, but a completion") {
		t.Fatalf("completion of a cancelled job: %v", v.Violations)
	}
	h = base()
	h.Pending = append(h.Pending, h.Cancels[0].ID)
	if v := Check(h); !hasViolation(v, "still stored") {
		t.Fatalf("cancelled job still queued: %v", v.Violations)
	}
	h = base()
	h.LostStarts = []string{"job x: its handler started for a lease the worker knew lost"}
	if v := Check(h); v.LostStarts != 1 || !hasViolation(v, "knew lost") {
		t.Fatalf("a start under a lease known lost: %+v", v)
	}
}

// A job of a failed enqueue call whose ID was generated, found claimed by
// its producer and sequence, must finish like any other.
func TestCheckGeneratedJobsOfAFailedCall(t *testing.T) {
	h := cleanHistory()
	t0 := time.Unix(1_900_000_000, 0)
	id := quick.NewID(t0)
	h.Generated = []JobRec{{Kind: KindNormal, Producer: 0, Seq: 7, TaskType: workType, Uncertain: true}}
	h.Claims = append(h.Claims, ClaimRec{ID: id, Token: 11, Attempt: 1, Worker: "w1", Claimed: t0, Producer: 0, Seq: 7})
	h.Runs = append(h.Runs, RunRec{ID: id, Token: 11, Worker: "w1", Start: t0, End: t0})
	if v := Check(h); !hasViolation(v, "was lost") || v.Generated != 1 {
		t.Fatalf("a generated job claimed and never completed: %+v", v)
	}
	h.Completions = append(h.Completions, CompletionRec{ID: id, Token: 11, Attempt: 1, Worker: "w1"})
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("a generated job completed: %v", v.Violations)
	}
}

func hasViolation(v Verdict, s string) bool {
	for _, x := range v.Violations {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// A completing transaction frees the slot before its handler returns: a
// run claimed then overlaps the handler's return, not its work.
func TestCheckLimitsCountsTheWorkNotTheCompletion(t *testing.T) {
	h, t0 := limitHistory()
	h.Runs[2].Start = t0.Add(1900 * time.Millisecond) // before run 0 returns at 2 s
	if v := Check(h); !hasViolation(v, "ran at once") {
		t.Fatalf("three at once without Done: %v", v.Violations)
	}
	h.Runs[0].Done = t0.Add(1800 * time.Millisecond) // its completion began at 1.8 s
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("violations: %v", v.Violations)
	}
}
