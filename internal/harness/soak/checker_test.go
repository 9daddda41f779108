package soak

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// cleanHistory is a history with no violation: two jobs completed under
// their last claims (one after a lapsed lease, with an overlap), a poison
// job dead-lettered, and one cron chain of two completed occurrences.
func cleanHistory() History {
	t0 := time.Unix(1_900_000_000, 0)
	a, b, p := quick.NewID(t0), quick.NewID(t0), quick.NewID(t0)
	c0, c1, c2 := quick.NewID(t0), quick.NewID(t0.Add(time.Second)), quick.NewID(t0.Add(2*time.Second))
	return History{
		Jobs: []JobRec{
			{ID: a, Kind: KindNormal, Producer: 0, Seq: 0},
			{ID: b, Kind: KindNormal, Producer: 0, Seq: 1},
			{ID: p, Kind: KindPoison, Producer: 1, Seq: 0},
		},
		Claims: []ClaimRec{
			{ID: a, Token: 1, Attempt: 1, Worker: "w1"},
			{ID: b, Token: 2, Attempt: 1, Worker: "w1"},
			{ID: b, Token: 3, Attempt: 2, Worker: "w2"}, // w1 paused past its lease
			{ID: p, Token: 4, Attempt: 1, Worker: "w2"},
			{ID: c0, Token: 5, Attempt: 1, Worker: "w2"},
			{ID: c1, Token: 6, Attempt: 1, Worker: "w1"},
		},
		Runs: []RunRec{
			{ID: a, Token: 1, Start: t0, End: t0.Add(time.Second)},
			{ID: b, Token: 2, Start: t0, End: t0.Add(12 * time.Second)},
			{ID: b, Token: 3, Start: t0.Add(10 * time.Second), End: t0.Add(11 * time.Second)},
			{ID: p, Token: 4, Start: t0, End: t0.Add(time.Second)},
			{ID: c0, Token: 5, Start: t0, End: t0.Add(time.Second), Schedule: "chain"},
			{ID: c1, Token: 6, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second), Schedule: "chain"},
		},
		Completions: []CompletionRec{
			{ID: a, Token: 1, Attempt: 1, Worker: "w1"},
			{ID: b, Token: 3, Attempt: 2, Worker: "w2"},
			{ID: c0, Token: 5, Attempt: 1, Worker: "w2", Schedule: "chain", ScheduledAt: t0},
			{ID: c1, Token: 6, Attempt: 1, Worker: "w1", Schedule: "chain", ScheduledAt: t0.Add(time.Second)},
		},
		Dead:        []quick.ID{p},
		CronPending: []quick.ID{c2},
		CronEntries: []CronEntry{{Name: "chain", Alive: true, Next: t0.Add(2 * time.Second), NextID: c2}},
	}
}

func TestCheckerPassesACleanHistory(t *testing.T) {
	v := Check(cleanHistory())
	if len(v.Violations) != 0 {
		t.Fatalf("violations in a clean history: %v", v.Violations)
	}
	if v.Jobs != 3 || v.Completed != 2 || v.DeadLettered != 1 || v.CronCompleted != 2 || v.Overlaps != 1 {
		t.Fatalf("counts: %+v", v)
	}
}

// TestCheckerReportsPlantedViolations plants one violation at a time and
// asserts the checker names it.
func TestCheckerReportsPlantedViolations(t *testing.T) {
	cases := []struct {
		name  string
		plant func(h *History)
		want  string
	}{
		{"duplicate completion", func(h *History) {
			h.Completions = append(h.Completions, CompletionRec{ID: h.Jobs[0].ID, Token: 1, Attempt: 1, Worker: "w1"})
		}, "completed 2 times"},
		{"lost job", func(h *History) {
			h.Completions = h.Completions[1:] // job a's completion never committed
		}, "was lost"},
		{"stale-token write", func(h *History) {
			h.Completions[1].Token, h.Completions[1].Attempt, h.Completions[1].Worker = 2, 1, "w1" // b completed by the paused w1
		}, "stale token"},
		{"token never claimed", func(h *History) {
			h.Completions[0].Token = 99
		}, "no claim handed out"},
		{"job created twice", func(h *History) {
			dup := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: dup, Kind: KindNormal, Producer: 0, Seq: 0})
			h.Claims = append(h.Claims, ClaimRec{ID: dup, Token: 50, Attempt: 1})
			h.Runs = append(h.Runs, RunRec{ID: dup, Token: 50})
			h.Completions = append(h.Completions, CompletionRec{ID: dup, Token: 50, Attempt: 1})
		}, "created twice"},
		{"phantom completion", func(h *History) {
			ph := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Claims = append(h.Claims, ClaimRec{ID: ph, Token: 51, Attempt: 1})
			h.Completions = append(h.Completions, CompletionRec{ID: ph, Token: 51, Attempt: 1})
		}, "no producer enqueued it"},
		{"job still queued", func(h *History) {
			h.Completions = h.Completions[1:]
			h.Pending = []quick.ID{h.Jobs[0].ID}
		}, "still queued"},
		{"never ran", func(h *History) {
			h.Runs = h.Runs[1:]
		}, "never ran"},
		{"poison not dead", func(h *History) {
			h.Dead = nil
		}, "not in the dead letters"},
		{"normal job dead-lettered", func(h *History) {
			h.Dead = append(h.Dead, h.Jobs[0].ID)
		}, "was dead-lettered"},
		{"cron chain broken", func(h *History) {
			h.CronPending = nil
			h.CronEntries[0] = CronEntry{Name: "chain"}
		}, "chain chain is broken"},
		{"cron second successor", func(h *History) {
			h.CronPending = append(h.CronPending, quick.NewID(time.Unix(1_900_000_000, 0)))
		}, "no chain's next one"},
		{"cron occurrence completed twice", func(h *History) {
			h.Completions[3].ScheduledAt = h.Completions[2].ScheduledAt
		}, "completed twice"},
		{"cron occurrence lost", func(h *History) {
			h.Completions = h.Completions[:3]
		}, "its chain lost it"},
		{"cron stale attempt", func(h *History) {
			h.Claims = append(h.Claims, ClaimRec{ID: h.Completions[3].ID, Token: 7, Attempt: 2})
		}, "stale token"},
		{"oversized transaction", func(h *History) {
			h.TooLarge = 1
		}, "transaction_too_large"},
		{"exhausted job lost", func(h *History) {
			x := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: x, Kind: KindExhaust, Producer: 3})
			h.Claims = append(h.Claims, ClaimRec{ID: x, Token: 60, Attempt: 1})
			h.Runs = append(h.Runs, RunRec{ID: x, Token: 60})
		}, "neither dead-lettered nor completed"},
		{"exhausted job dead and completed", func(h *History) {
			x := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: x, Kind: KindExhaust, Producer: 3})
			h.Claims = append(h.Claims, ClaimRec{ID: x, Token: 60, Attempt: 1})
			h.Runs = append(h.Runs, RunRec{ID: x, Token: 60})
			h.Completions = append(h.Completions, CompletionRec{ID: x, Token: 60, Attempt: 1})
			h.Dead = append(h.Dead, x)
		}, "also has a committed completion"},
		{"edited chain broken", func(h *History) {
			h.CronEdited = map[string]bool{"chain": true}
			h.CronRecreated = map[string]bool{"chain": true}
			h.CronPending = nil
			h.CronEntries[0] = CronEntry{Name: "chain"}
		}, "chain chain is broken"},
		{"job stored twice", func(h *History) {
			h.Completions = h.Completions[1:]
			h.Pending = []quick.ID{h.Jobs[0].ID, h.Jobs[0].ID}
		}, "stored 2 times"},
		{"job queued and dead", func(h *History) {
			h.Pending = []quick.ID{h.Jobs[2].ID}
		}, "must exist once"},
		{"job claimed twice at one attempt", func(h *History) {
			h.Claims = append(h.Claims, ClaimRec{ID: h.Jobs[0].ID, Token: 70, Attempt: 1, Worker: "w3"})
		}, "claimed twice at attempt 1"},
		{"short-mode holder wrote after a later hand-out", func(h *History) {
			s := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: s, Kind: KindTransient, Producer: 4, TaskType: shortType})
			// w1's hand-out at attempt 1 lapsed; w2 took the lane over,
			// claimed it at attempt 1 and failed it (its token cleared);
			// w3 handed it out at attempt 2; then the paused w1 completes:
			// the job's token is 0 for both hand-outs.
			h.Claims = append(h.Claims, ClaimRec{ID: s, Attempt: 1, Worker: "w1", Short: true}, ClaimRec{ID: s, Token: 80, Attempt: 1, Worker: "w2"},
				ClaimRec{ID: s, Attempt: 2, Worker: "w3", Short: true})
			h.Runs = append(h.Runs, RunRec{ID: s})
			h.Completions = append(h.Completions, CompletionRec{ID: s, Attempt: 1, Worker: "w1"})
		}, "stale token"},
		{"short-mode hand-out made twice", func(h *History) {
			s := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: s, Kind: KindNormal, Producer: 4, TaskType: shortType})
			h.Claims = append(h.Claims, ClaimRec{ID: s, Token: 1, Attempt: 1, Worker: "w1", Short: true}, ClaimRec{ID: s, Token: 2, Attempt: 1, Worker: "w2", Short: true})
			h.Runs = append(h.Runs, RunRec{ID: s})
			h.Completions = append(h.Completions, CompletionRec{ID: s, Token: 2, Attempt: 1, Worker: "w2"})
		}, "claimed twice at attempt 1"},
		{"short-mode holder wrote after the takeover", func(h *History) {
			s := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: s, Kind: KindNormal, Producer: 4, TaskType: shortType})
			// w1's hand-out (job token 0), then w2's per-job claim of
			// the lane it took over, at the same attempt; w1 completes.
			h.Claims = append(h.Claims, ClaimRec{ID: s, Attempt: 1, Worker: "w1", Short: true}, ClaimRec{ID: s, Token: 80, Attempt: 1, Worker: "w2"})
			h.Runs = append(h.Runs, RunRec{ID: s})
			h.Completions = append(h.Completions, CompletionRec{ID: s, Attempt: 1, Worker: "w1"})
		}, "stale token"},
		{"completion before the requeue", func(h *History) {
			r := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: r, Kind: KindRequeue, Producer: 4})
			h.Claims = append(h.Claims, ClaimRec{ID: r, Token: 90, Attempt: 1}, ClaimRec{ID: r, Token: 91, Attempt: 1, Epoch: 1})
			h.Runs = append(h.Runs, RunRec{ID: r})
			h.Completions = append(h.Completions, CompletionRec{ID: r, Token: 90, Attempt: 1})
		}, "stale token"},
		{"requeue job left dead", func(h *History) {
			r := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: r, Kind: KindRequeue, Producer: 4})
			h.Claims = append(h.Claims, ClaimRec{ID: r, Token: 90, Attempt: 1})
			h.Runs = append(h.Runs, RunRec{ID: r})
			h.Dead = append(h.Dead, r)
		}, "was dead-lettered"},
		{"checkpoint job completed at once", func(h *History) {
			c := quick.NewID(time.Unix(1_900_000_000, 0))
			h.Jobs = append(h.Jobs, JobRec{ID: c, Kind: KindCheckpoint, Producer: 4})
			h.Claims = append(h.Claims, ClaimRec{ID: c, Token: 95, Attempt: 1})
			h.Runs = append(h.Runs, RunRec{ID: c})
			h.Completions = append(h.Completions, CompletionRec{ID: c, Token: 95, Attempt: 1})
		}, "before any run that checkpointed"},
		{"lookup index left", func(h *History) {
			h.IndexLeft = []quick.ID{h.Jobs[0].ID}
		}, "lookup index entry"},
		{"handler saw a wrong checkpoint", func(h *History) {
			h.HandlerProblems = []string{"job x (checkpoint) resumed from checkpoint \"\", stored \"ckpt:x\""}
		}, "resumed from checkpoint"},
		{"edited chain doubled", func(h *History) {
			h.CronEdited = map[string]bool{"chain": true}
			h.CronRecreated = map[string]bool{"chain": true}
			h.CronPending = append(h.CronPending, quick.NewID(time.Unix(1_900_000_000, 0)))
		}, "no chain's next one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := cleanHistory()
			c.plant(&h)
			v := Check(h)
			found := false
			for _, s := range v.Violations {
				found = found || strings.Contains(s, c.want)
			}
			if !found {
				t.Fatalf("planted %s; want a violation containing %q, got %v", c.name, c.want, v.Violations)
			}
		})
	}
}

// TestUncertainEnqueueThatNeverCommitted is not a lost job.
func TestUncertainEnqueueThatNeverCommitted(t *testing.T) {
	h := cleanHistory()
	h.Jobs = append(h.Jobs, JobRec{ID: quick.NewID(time.Unix(1_900_000_000, 0)), Kind: KindNormal, Producer: 2, Uncertain: true})
	if v := Check(h); len(v.Violations) != 0 || v.Jobs != 3 {
		t.Fatalf("an uncertain enqueue that left no trace: %+v", v)
	}
}

// TestCheckerCountsWhatIsNoViolation: an exhausted job dead-lettered by a
// claim, a large job, a dead-lettered cron occurrence whose chain goes on,
// and a run of an edited chain's cancelled occurrence are counted, not
// failed.
func TestCheckerCountsWhatIsNoViolation(t *testing.T) {
	h := cleanHistory()
	t0 := time.Unix(1_900_000_000, 0)
	x, l, d, ab := quick.NewID(t0), quick.NewID(t0), quick.NewID(t0), quick.NewID(t0)
	h.Jobs = append(h.Jobs, JobRec{ID: x, Kind: KindExhaust, Producer: 3}, JobRec{ID: l, Kind: KindLarge, Producer: 3, Seq: 1})
	h.Claims = append(h.Claims, ClaimRec{ID: x, Token: 60, Attempt: 1}, ClaimRec{ID: l, Token: 61, Attempt: 1}, ClaimRec{ID: ab, Token: 1, Attempt: 1})
	h.Runs = append(h.Runs, RunRec{ID: x, Token: 60}, RunRec{ID: l, Token: 61}, RunRec{ID: ab, Token: 1, Schedule: "chain"})
	h.Completions = append(h.Completions, CompletionRec{ID: l, Token: 61, Attempt: 1})
	h.Dead = append(h.Dead, x)
	h.CronDead = []quick.ID{d}
	h.CronEdited = map[string]bool{"chain": true}
	v := Check(h)
	if len(v.Violations) != 0 {
		t.Fatalf("violations: %v", v.Violations)
	}
	if v.Exhausted != 1 || v.Large != 1 || v.CronDeadLettered != 1 || v.CronAbandoned != 1 {
		t.Fatalf("counts: %+v", v)
	}
}

// TestCheckerPassesZonesHistories: a short-mode hand-out followed by the
// per-job claim of the worker that took the lane over (same attempt, later),
// a job requeued from the dead letters (attempts start again), and a
// checkpointing job completed on its second attempt are clean.
func TestCheckerPassesZonesHistories(t *testing.T) {
	h := cleanHistory()
	t0 := time.Unix(1_900_000_000, 0)
	s, r, c := quick.NewID(t0), quick.NewID(t0), quick.NewID(t0)
	h.Jobs = append(h.Jobs,
		JobRec{ID: s, Kind: KindNormal, Producer: 4, TaskType: shortType, Tenant: "t00"},
		JobRec{ID: r, Kind: KindRequeue, Producer: 4, Seq: 1, TaskType: workType, Tenant: "t01"},
		JobRec{ID: c, Kind: KindCheckpoint, Producer: 4, Seq: 2, TaskType: workType, Tenant: "t02"})
	h.Claims = append(h.Claims,
		ClaimRec{ID: s, Token: 0, Attempt: 1, Worker: "w1", Short: true}, ClaimRec{ID: s, Token: 80, Attempt: 1, Worker: "w2"},
		ClaimRec{ID: r, Token: 90, Attempt: 1}, ClaimRec{ID: r, Token: 91, Attempt: 1, Epoch: 1},
		ClaimRec{ID: c, Token: 95, Attempt: 1}, ClaimRec{ID: c, Token: 96, Attempt: 2})
	h.Runs = append(h.Runs, RunRec{ID: s}, RunRec{ID: r}, RunRec{ID: c})
	h.Completions = append(h.Completions,
		CompletionRec{ID: s, Token: 80, Attempt: 1, Worker: "w2"}, CompletionRec{ID: r, Token: 91, Attempt: 1}, CompletionRec{ID: c, Token: 96, Attempt: 2})
	v := Check(h)
	if len(v.Violations) != 0 {
		t.Fatalf("violations: %v", v.Violations)
	}
	if v.Short != 1 || v.Requeued != 1 || v.Resumed != 1 || v.Tenants != 4 {
		t.Fatalf("counts: %+v", v)
	}
	// The frozen w1 prefetched its hand-out and started the handler only
	// after w2's takeover claim: recorded in that order, still clean.
	h.Claims = slices.DeleteFunc(h.Claims, func(c ClaimRec) bool { return c.ID == s })
	h.Claims = append(h.Claims, ClaimRec{ID: s, Token: 80, Attempt: 1, Worker: "w2"}, ClaimRec{ID: s, Token: 0, Attempt: 1, Worker: "w1", Short: true})
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("a takeover's claim recorded before the hand-out it took over: %v", v.Violations)
	}
	// A frozen worker started a hand-out of the requeue job only after
	// the job was requeued and run again: its claim keeps the epoch it was
	// claimed in (TestClaimEpochIsTheLeasesNotTheHandlerStart), recorded
	// last, and its completion never committed (its lane was lost).
	h.Claims = append(h.Claims, ClaimRec{ID: r, Token: 92, Attempt: 1, Worker: "w3", Short: true})
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("a stale hand-out started after the requeue: %v", v.Violations)
	}
}

// TestCheckerLeavesTheIndexOfQueuedJobs: a cron chain's pending occurrence
// keeps its lookup index entry.
func TestCheckerLeavesTheIndexOfQueuedJobs(t *testing.T) {
	h := cleanHistory()
	h.IndexLeft = h.CronPending
	if v := Check(h); len(v.Violations) != 0 {
		t.Fatalf("violations: %v", v.Violations)
	}
}
