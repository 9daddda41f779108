package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Verdict is what the checker found.
type Verdict struct {
	Jobs          int `json:"jobs"`
	Completed     int `json:"completed"`
	DeadLettered  int `json:"dead_lettered"`
	Claims        int `json:"claims"`
	Runs          int `json:"runs"`
	Overlaps      int `json:"overlaps"`
	CronCompleted int `json:"cron_occurrences_completed"`
	CronChains    int `json:"cron_chains"`
	// Exhausted counts the one-attempt jobs a claim dead-lettered (their
	// holder vanished), ExhaustedUnrun those of them whose only claim was
	// by a worker killed before it started their handler; ExhaustCompleted
	// those whose frozen holder woke before any claim took them and
	// completed them. Large counts the
	// large-payload jobs.
	Exhausted        int `json:"exhausted"`
	ExhaustedUnrun   int `json:"exhausted_unrun,omitempty"`
	ExhaustCompleted int `json:"exhaust_completed"`
	Large            int `json:"large"`
	// CronDeadLettered counts occurrences dead-lettered (exhausted by a
	// vanished holder) with their successor enqueued; CronAbandoned runs
	// of an edited chain's occurrence that an edit cancelled mid-run.
	CronDeadLettered int `json:"cron_dead_lettered"`
	// CronFewest is the fewest occurrences any one chain completed: a sign
	// of chains that stalled (safe, but not live), which is no violation.
	CronFewest    int `json:"cron_fewest"`
	CronAbandoned int `json:"cron_abandoned"`
	// TooLarge counts commits refused with 2101: each is a violation.
	TooLarge int64 `json:"too_large"`
	// The zones configurations: jobs of the short-job type, tenants the
	// jobs were spread over, jobs completed after a requeue from the dead
	// letters, checkpointing jobs completed after resuming, slow jobs
	// (longer than a lane lease) completed.
	Short    int `json:"short,omitempty"`
	Tenants  int `json:"tenants,omitempty"`
	Requeued int `json:"requeued,omitempty"`
	Resumed  int `json:"resumed,omitempty"`
	Slow     int `json:"slow,omitempty"`
	// LostStarts counts handler starts for a lease the worker already
	// knew lost (testhooks.StartedLost): each is a violation.
	LostStarts int `json:"lost_starts"`
	// Cancelled counts the prefetched jobs the harness cancelled (Cancel
	// returned nil), CancelledUnrun those of them whose handler never
	// started; CancelledLate the cancels that found the job finished.
	Cancelled      int `json:"cancelled,omitempty"`
	CancelledUnrun int `json:"cancelled_unrun,omitempty"`
	CancelledLate  int `json:"cancelled_late,omitempty"`
	// Generated counts the jobs whose IDs a failed enqueue call generated
	// and that were found stored (by their producer and sequence).
	Generated int `json:"generated_found,omitempty"`
	// Limits (limits.go): the runs of limited tenants checked, those cut
	// short because their holder froze or was killed while they ran (their
	// lease lapsed: the one way past a limit), and the most runs of one
	// tenant and task type at once, by the concurrency limit in force
	// ("L=1", "L=5"): LimitMax without the runs of frozen or killed
	// holders after they froze, LimitMaxAll with them. RateClaims counts
	// the claims under a rate, RateMaxInSecond the most in one second.
	LimitRuns       int            `json:"limit_runs,omitempty"`
	LimitLapsed     int            `json:"limit_lapsed_runs,omitempty"`
	LimitMax        map[string]int `json:"limit_max_running,omitempty"`
	LimitMaxAll     map[string]int `json:"limit_max_running_with_lapsed,omitempty"`
	RateClaims      int            `json:"rate_claims,omitempty"`
	RateMaxInSecond int            `json:"rate_max_in_second,omitempty"`
	// Moves (moves.go): FenceReruns counts the jobs that ran again after a
	// move because they were leased when it fenced them (their old run's
	// completion failed with ErrLeaseLost, and a claim after the move's
	// start took them), DeletedJobs the jobs of tenants deleted on
	// purpose (each completed before the deletion or deleted unfinished).
	FenceReruns int `json:"fence_reruns,omitempty"`
	DeletedJobs int `json:"deleted_jobs,omitempty"`
	// Violations lists each violation found; the run fails if any.
	Violations []string `json:"violations"`
}

func (v *Verdict) violate(format string, args ...any) {
	v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
}

// Check verifies the history against what the queue promises (see the
// package comment).
func Check(h History) Verdict {
	v := Verdict{Claims: len(h.Claims), Runs: len(h.Runs), CronChains: len(h.CronEntries), TooLarge: h.TooLarge}
	if h.TooLarge > 0 {
		v.violate("%d commits failed with 2101 transaction_too_large: a transaction is not bounded in bytes", h.TooLarge)
	}

	for _, p := range h.HandlerProblems {
		v.violate("%s", p)
	}
	v.LostStarts = len(h.LostStarts)
	for _, p := range h.LostStarts {
		v.violate("%s", p)
	}
	h.Jobs = attributeGenerated(h, &v)

	short := map[quick.ID]bool{}
	kind := map[quick.ID]string{}
	acrossMove := movesOf(h)
	for _, j := range h.Jobs {
		short[j.ID] = j.TaskType == shortType
		kind[j.ID] = j.Kind
		if j.TaskType != "" {
			kind[j.ID] = j.TaskType + "/" + j.Kind
		}
	}

	// The last claim of each job: the one with the highest attempt in the
	// latest epoch (a requeue starts the attempts again), since every claim
	// of a job counts one more attempt than the one before. In short-job
	// mode a hand-out counts no attempt, so the per-job claim of a worker
	// that took the lane over from a vanished holder shows the same
	// attempt as that holder's hand-out, and is the later one whatever the
	// order the handlers started in (a worker prefetches: a frozen one
	// starts a hand-out's handler long after it got it). A short hand-out
	// after a per-job claim would show the next attempt.
	last := map[quick.ID]ClaimRec{}
	claimedTokens := map[quick.ID]map[uint64]bool{}
	type claimAt struct {
		id             quick.ID
		epoch, attempt int
	}
	atAttempt := map[claimAt]ClaimRec{}
	for _, c := range h.Claims {
		if l, ok := last[c.ID]; !ok || claimedAfter(c, l, acrossMove(c, l)) {
			last[c.ID] = c
		}
		if claimedTokens[c.ID] == nil {
			claimedTokens[c.ID] = map[uint64]bool{}
		}
		claimedTokens[c.ID][c.Token] = true
		// A job stored once is claimed once per attempt: two claims of
		// one attempt are two copies of the job, or a job handed out
		// twice in short-job mode without a takeover. The one pair that
		// shares an attempt is a short hand-out and the per-job claim of
		// the worker that took the lane over.
		// A short-job hand-out at a move's source runs again at its
		// destination at the same attempt (the copy has no lease to
		// revoke): a re-run at the fence, counted below.
		k := claimAt{c.ID, c.Epoch, c.Attempt}
		if o, dup := atAttempt[k]; dup && o.Short == c.Short && !acrossMove(o, c) {
			v.violate("job %s (%s) was claimed twice at attempt %d (tokens %x by %s at %s and %x by %s at %s): it was duplicated; runs: %s",
				c.ID, kind[c.ID], c.Attempt, o.Token, o.Worker, claimTimes(o), c.Token, c.Worker, claimTimes(c), describeRuns(h.Runs, c.ID))
		}
		atAttempt[k] = c
	}
	runs := map[quick.ID][]RunRec{}
	for _, r := range h.Runs {
		runs[r.ID] = append(runs[r.ID], r)
	}
	v.Overlaps = countOverlaps(runs)
	deleted := map[string]DeleteRec{}
	for _, d := range h.Deletes {
		deleted[d.Tenant] = d
	}
	claimsOf := map[quick.ID][]ClaimRec{}
	for _, c := range h.Claims {
		claimsOf[c.ID] = append(claimsOf[c.ID], c)
	}
	v.FenceReruns = countFenceReruns(claimsOf, runs, acrossMove)
	for _, l := range h.Left {
		v.violate("%s", l)
	}
	checkFences(h, &v)

	completions := map[quick.ID][]CompletionRec{}
	for _, c := range h.Completions {
		completions[c.ID] = append(completions[c.ID], c)
	}
	// Stale tokens and duplicates, for every completion of every kind.
	for id, cs := range completions {
		if len(cs) > 1 {
			v.violate("job %s completed %d times (tokens %v)", id, len(cs), tokens(cs))
		}
		for _, c := range cs {
			l, ok := last[id]
			switch {
			case !claimedTokens[id][c.Token]:
				v.violate("job %s: a completion committed under token %x, which no claim handed out", id, c.Token)
			case ok && (c.Token != l.Token || c.Attempt != l.Attempt || c.Worker != l.Worker):
				// The worker and attempt too: a short-job hand-out keeps
				// the job's stored token, so two hand-outs of one job may
				// show the same token, and only the holder tells them apart.
				v.violate("job %s: a completion committed under stale token %x (attempt %d, %s); the last claim was token %x (attempt %d, %s)",
					id, c.Token, c.Attempt, c.Worker, l.Token, l.Attempt, l.Worker)
			}
		}
	}

	dead := set(h.Dead)
	pending := set(h.Pending)
	stored := map[quick.ID]int{}
	for _, id := range append(slices.Clone(h.Pending), h.Dead...) {
		stored[id]++
	}
	for id, n := range stored {
		if n > 1 {
			v.violate("job %s is stored %d times at the end (queued or dead-lettered): a job enqueued once must exist once", id, n)
		}
	}
	tenants := map[string]bool{}
	enqueued := map[quick.ID]JobRec{}
	logical := map[[2]int]quick.ID{}
	for _, j := range h.Jobs {
		if _, dup := enqueued[j.ID]; dup {
			v.violate("job %s was recorded as enqueued twice", j.ID)
		}
		enqueued[j.ID] = j
		key := [2]int{j.Producer, j.Seq}
		if other, dup := logical[key]; dup && !j.Uncertain {
			v.violate("producer %d job %d was created twice, as %s and %s", j.Producer, j.Seq, other, j.ID)
		}
		logical[key] = j.ID
	}
	cancels := map[quick.ID]CancelRec{}
	for _, c := range h.Cancels {
		cancels[c.ID] = c
	}
	for _, j := range h.Jobs {
		exists := len(runs[j.ID]) > 0 || len(completions[j.ID]) > 0 || dead[j.ID] || pending[j.ID] || len(claimedTokens[j.ID]) > 0
		if j.Uncertain && !exists {
			continue // the failed enqueue did not commit: nothing to finish
		}
		v.Jobs++
		if d, ok := deleted[j.Tenant]; ok {
			// Deleted on purpose: completed before the deletion reached
			// it, or deleted; never claimed once the deletion returned.
			v.DeletedJobs++
			if pending[j.ID] || dead[j.ID] {
				v.violate("job %s of tenant %s is still stored (queued %v, dead %v) after the tenant was deleted", j.ID, j.Tenant, pending[j.ID], dead[j.ID])
			}
			for _, c := range claimsOf[j.ID] {
				if c.Claimed.After(d.To) {
					v.violate("job %s of tenant %s was claimed at %s by %s, after its deletion returned at %s", j.ID, j.Tenant,
						c.Claimed.Format("15:04:05.000"), c.Worker, d.To.Format("15:04:05.000"))
				}
			}
			continue
		}
		if c, ok := cancels[j.ID]; ok {
			// A prefetched job the harness cancelled: it must be gone,
			// with no completion (a completion after the cancel would
			// have written under a lease the cancel ended). One whose
			// cancel found it finished is a job like any other; one whose
			// cancel failed otherwise may have either fate.
			switch {
			case c.Err == "":
				v.Cancelled++
				if len(runs[j.ID]) == 0 {
					v.CancelledUnrun++
				}
				switch {
				case len(completions[j.ID]) > 0:
					v.violate("job %s was cancelled while prefetched, but a completion committed", j.ID)
				case pending[j.ID] || dead[j.ID]:
					v.violate("job %s was cancelled while prefetched, but it is still stored (queued %v, dead %v)", j.ID, pending[j.ID], dead[j.ID])
				}
				continue
			case c.NotFound:
				v.CancelledLate++
			case len(completions[j.ID]) == 0 && !pending[j.ID] && !dead[j.ID]:
				continue // the uncertain cancel committed
			}
		}
		n := len(completions[j.ID])
		if n > 0 {
			v.Completed++
		}
		if dead[j.ID] {
			v.DeadLettered++
		}
		tenants[j.Tenant] = true
		if short[j.ID] {
			v.Short++
		}
		if last[j.ID].Epoch > 0 {
			v.Requeued++
		}
		switch {
		case j.Kind == KindCheckpoint && n > 0:
			v.Resumed++
		case j.Kind == KindSlow && n > 0:
			v.Slow++
		}
		switch {
		case j.Kind == KindLarge:
			v.Large++
		case j.Kind == KindExhaust && dead[j.ID]:
			v.Exhausted++
		case j.Kind == KindExhaust && n > 0:
			v.ExhaustCompleted++
		}
		switch {
		case len(runs[j.ID]) > 0:
		case j.Kind == KindExhaust && dead[j.ID]:
			// Its one attempt was spent by a claim whose worker was
			// killed before it started the handler (a worker prefetches
			// claimed jobs): dead-lettered as its attempts say.
			v.ExhaustedUnrun++
		default:
			v.violate("job %s (%s) never ran", j.ID, j.Kind)
		}
		switch {
		case pending[j.ID]:
			v.violate("job %s (%s) is still queued at the end", j.ID, j.Kind)
		case j.Kind == KindPoison && !dead[j.ID]:
			v.violate("job %s always fails but is not in the dead letters", j.ID)
		case j.Kind == KindPoison && n > 0:
			v.violate("job %s always fails but has a committed completion", j.ID)
		case j.Kind == KindExhaust && dead[j.ID] && n > 0:
			v.violate("job %s was dead-lettered as exhausted but also has a committed completion", j.ID)
		case j.Kind == KindExhaust && !dead[j.ID] && n == 0:
			v.violate("job %s (exhaust) was lost: neither dead-lettered nor completed", j.ID)
		case j.Kind == KindExhaust:
		case j.Kind == KindCheckpoint && n > 0 && completions[j.ID][0].Attempt < 2 && last[j.ID].Epoch == 0:
			v.violate("job %s (checkpoint) completed on attempt %d, before any run that checkpointed and failed", j.ID, completions[j.ID][0].Attempt)
		case j.Kind != KindPoison && dead[j.ID]:
			v.violate("job %s (%s) was dead-lettered", j.ID, j.Kind)
		case j.Kind != KindPoison && n == 0:
			v.violate("job %s (%s) was lost: no committed completion, not queued, not dead", j.ID, j.Kind)
		}
	}
	for id, cs := range completions {
		if _, ok := enqueued[id]; !ok && cs[0].Schedule == "" {
			v.violate("job %s completed but no producer enqueued it", id)
		}
	}
	for _, id := range append(slices.Clone(h.Dead), h.Pending...) {
		if _, ok := enqueued[id]; !ok {
			v.violate("job %s is in the queue but no producer enqueued it", id)
		}
	}
	v.Tenants = len(tenants)
	cronPending := set(h.CronPending)
	for _, id := range h.IndexLeft {
		if pending[id] || cronPending[id] {
			continue // still queued: its entry says where
		}
		j := enqueued[id]
		v.violate("job %s (%s/%s, completed %d times, dead %v): its lookup index entry (S (2, \"i\")) is left with every job finished", id, j.TaskType, j.Kind, len(completions[id]), dead[id])
	}
	checkCron(h, completions, &v)
	checkLimits(h, &v)
	sort.Strings(v.Violations)
	return v
}

// checkCron verifies each chain: every occurrence completed at most once,
// every one that ran is completed or is the chain's pending one, the pending
// one is later than every completed one, and no chain has a second pending
// occurrence (a completion that scheduled two successors) or none (one
// that scheduled none).
func checkCron(h History, completions map[quick.ID][]CompletionRec, v *Verdict) {
	if len(h.CronEntries) == 0 {
		return
	}
	pending := set(h.CronPending)
	dead := set(h.CronDead)
	lastDone := map[string]time.Time{}
	type occ struct {
		name string
		at   time.Time
	}
	seen := map[occ]quick.ID{}
	for id, cs := range completions {
		c := cs[0]
		if c.Schedule == "" {
			continue
		}
		v.CronCompleted++
		o := occ{c.Schedule, c.ScheduledAt}
		if other, dup := seen[o]; dup && !h.CronRecreated[c.Schedule] {
			v.violate("cron %s at %v completed twice, as %s and %s", c.Schedule, c.ScheduledAt, other, id)
		}
		seen[o] = id
		if c.ScheduledAt.After(lastDone[c.Schedule]) {
			lastDone[c.Schedule] = c.ScheduledAt
		}
	}
	perChain := map[string]int{}
	for _, cs := range completions {
		if cs[0].Schedule != "" {
			perChain[cs[0].Schedule]++
		}
	}
	v.CronFewest = -1
	next := map[quick.ID]bool{}
	for _, e := range h.CronEntries {
		if n := perChain[e.Name]; v.CronFewest < 0 || n < v.CronFewest {
			v.CronFewest = n
		}
		next[e.NextID] = true
		switch {
		case !e.Alive || e.NextID.IsZero():
			v.violate("cron chain %s is broken: no pending occurrence after %v", e.Name, lastDone[e.Name])
		case !pending[e.NextID]:
			v.violate("cron chain %s: its next occurrence %s is not in the queue", e.Name, e.NextID)
		case !e.Next.After(lastDone[e.Name]) && !h.CronRecreated[e.Name]:
			v.violate("cron chain %s: its next occurrence (%v) is not after its last completed one (%v)", e.Name, e.Next, lastDone[e.Name])
		}
	}
	for _, id := range h.CronPending {
		if !next[id] {
			chains := ""
			for _, e := range h.CronEntries {
				chains += fmt.Sprintf("; %s next %s at %v (%s)", e.Name, e.NextID, e.Next.UTC().Format("15:04:05.000"), h.CronInfo[e.NextID])
			}
			v.violate("cron occurrence %s (%s) is queued but is no chain's next one (a second successor?)%s", id, h.CronInfo[id], chains)
		}
	}
	// A dead-lettered occurrence (its one attempt spent by a holder that
	// vanished) is no violation: the chain checks above find a chain left
	// without its successor.
	v.CronDeadLettered = len(h.CronDead)
	for _, r := range h.Runs {
		if r.Schedule == "" || len(completions[r.ID]) > 0 || pending[r.ID] || dead[r.ID] {
			continue
		}
		if h.CronEdited[r.Schedule] {
			v.CronAbandoned++ // an edit cancelled it while it ran
			continue
		}
		v.violate("cron occurrence %s of %s ran but was neither completed nor is it queued: its chain lost it", r.ID, r.Schedule)
	}
}

// countOverlaps counts runs of a job that started before an earlier run of
// the same job had ended.
func countOverlaps(runs map[quick.ID][]RunRec) int {
	n := 0
	for _, rs := range runs {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Start.Before(rs[j].Start) })
		for i := 1; i < len(rs); i++ {
			end := rs[0].End
			for _, p := range rs[:i] {
				if p.End.After(end) {
					end = p.End
				}
			}
			if rs[i].Start.Before(end) {
				n++
			}
		}
	}
	return n
}

func tokens(cs []CompletionRec) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%x", c.Token)
	}
	return out
}

func set(ids []quick.ID) map[quick.ID]bool {
	m := make(map[quick.ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// describeRuns lists a job's runs, for a violation's report.
func describeRuns(runs []RunRec, id quick.ID) string {
	var out []string
	for _, r := range runs {
		if r.ID != id {
			continue
		}
		s := fmt.Sprintf("%s %s-%s", r.Worker, r.Start.Format("15:04:05.000"), r.End.Format("15:04:05.000"))
		if r.Err != "" {
			s += " (" + r.Err + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// claimTimes formats when a claim was made and its handler started.
func claimTimes(c ClaimRec) string {
	const f = "15:04:05.000"
	if c.Claimed.IsZero() {
		return c.At.Format(f)
	}
	return c.Claimed.Format(f) + " (started " + c.At.Format(f) + ")"
}

// claimedAfter says whether claim c of a job came after claim l: a later
// epoch, a higher attempt, or at one attempt the per-job claim of a
// takeover after the short hand-out; else the later recorded. Two claims
// at one attempt on either side of a move (moved is set: a hand-out at
// the source, and the job's run at the destination) are ordered by when
// they were claimed, which is real time (a worker may start a prefetched
// hand-out late).
func claimedAfter(c, l ClaimRec, moved bool) bool {
	switch {
	case c.Epoch != l.Epoch:
		return c.Epoch > l.Epoch
	case c.Attempt != l.Attempt:
		return c.Attempt > l.Attempt
	case moved && !c.Claimed.Equal(l.Claimed):
		return c.Claimed.After(l.Claimed)
	case c.Short != l.Short:
		return !c.Short
	}
	return true
}

// movesOf returns whether two claims of a job lie on either side of a
// move of its tenant: one claimed before the move ended, the other after
// it began.
func movesOf(h History) func(a, b ClaimRec) bool {
	tenant := map[quick.ID]string{}
	for _, j := range h.Jobs {
		tenant[j.ID] = j.Tenant
	}
	moves := map[string][]MoveRec{}
	for _, m := range h.Moves {
		moves[m.Tenant] = append(moves[m.Tenant], m)
	}
	return func(a, b ClaimRec) bool {
		if b.Claimed.Before(a.Claimed) {
			a, b = b, a
		}
		for _, m := range moves[tenant[a.ID]] {
			if a.Claimed.Before(m.To) && b.Claimed.After(m.From) {
				return true
			}
		}
		return false
	}
}

// checkFences finds claims of the jobs the mover seeded into a moving
// tenant while its move held still with both zones fenced: none may be (a
// claim dated within fenceMargin of the fence may have committed before
// it).
func checkFences(h History, v *Verdict) {
	if len(h.Fences) == 0 {
		return
	}
	job := map[quick.ID]JobRec{}
	for _, j := range h.Jobs {
		job[j.ID] = j
	}
	for _, c := range h.Claims {
		j, ok := job[c.ID]
		if !ok || j.Producer != moveProducerID {
			continue
		}
		for _, f := range h.Fences {
			if f.Tenant == j.Tenant && f.TaskType == j.TaskType && c.Claimed.After(f.From.Add(fenceMargin)) && c.Claimed.Before(f.To) {
				v.violate("job %s of tenant %.8q… (%s) was claimed by %s at %s, while its move held both zones fenced (%s to %s)", c.ID, j.Tenant, j.TaskType, c.Worker,
					c.Claimed.Format("15:04:05.000"), f.From.Format("15:04:05.000"), f.To.Format("15:04:05.000"))
			}
		}
	}
}

// countFenceReruns counts the jobs claimed again across a move after a
// run whose completion failed with ErrLeaseLost: leased when the move
// fenced them, they ran once more at the destination.
func countFenceReruns(claims map[quick.ID][]ClaimRec, runs map[quick.ID][]RunRec, acrossMove func(a, b ClaimRec) bool) int {
	n := 0
	for id, cs := range claims {
		lost := map[[2]any]bool{}
		for _, r := range runs[id] {
			if r.LeaseLost {
				lost[[2]any{r.Token, r.Worker}] = true
			}
		}
		if len(lost) == 0 {
			continue
		}
	pairs:
		for _, a := range cs {
			if !lost[[2]any{a.Token, a.Worker}] {
				continue
			}
			for _, b := range cs {
				if b.Claimed.After(a.Claimed) && acrossMove(a, b) {
					n++
					break pairs
				}
			}
		}
	}
	return n
}

// attributeGenerated returns the jobs with those of failed enqueue calls
// whose IDs were generated, and found (claimed) all the same, added under
// the IDs they were found with: known by the producer and sequence in their
// payload, they must then finish like any other; not found, they were not
// stored.
func attributeGenerated(h History, v *Verdict) []JobRec {
	if len(h.Generated) == 0 {
		return h.Jobs
	}
	type ps struct{ p, n int }
	want := map[ps]JobRec{}
	for _, j := range h.Generated {
		want[ps{j.Producer, j.Seq}] = j
	}
	known := map[quick.ID]bool{}
	for _, j := range h.Jobs {
		known[j.ID] = true
	}
	out := slices.Clone(h.Jobs)
	for _, c := range h.Claims {
		j, ok := want[ps{c.Producer, c.Seq}]
		if !ok || known[c.ID] {
			continue
		}
		known[c.ID] = true
		j.ID = c.ID
		out = append(out, j)
		v.Generated++
	}
	return out
}
