package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// History is everything the checker looks at: what the producers did and
// saw, what the workers reported, what the fault schedule did, and the
// database at the end.
type History struct {
	// Start is when the run began and BaselineEnd when the first fault
	// could strike (unix ns).
	Start, BaselineEnd int64
	Batches            []*BatchRec
	// Events are the workers' start and end events.
	Events []Event
	Faults []FaultRec
	// Records are the app records at the end.
	Records *Records
	// Queued and Dead are the jobs still queued and dead-lettered at the
	// end, by task type.
	Queued, Dead map[string][]quick.ID
	Cron         []CronEntry
	// Codes are the FDB errors handed to OnError, by code: the workers'
	// and the producers' together.
	Codes map[int]int64
	// Problems are the harness's own failures (a child that died, a fault
	// that failed, a line that is no event); each fails the run.
	Problems []string
}

// Verdict is what the checker found.
type Verdict struct {
	Batches         int `json:"batches"`
	BatchesFailed   int `json:"batches_failed"`
	BatchesUnknown  int `json:"batches_unknown"`
	UnknownApplied  int `json:"batches_unknown_applied"`
	Jobs            int `json:"jobs"`
	Completed       int `json:"completed"`
	DeadLettered    int `json:"dead_lettered"`
	GhostsChecked   int `json:"ghost_ids_checked"`
	CronOccurrences int `json:"cron_occurrences"`
	CronChains      int `json:"cron_chains"`
	CronCollapsed   int `json:"cron_collapsed"`
	Runs            int `json:"runs"`
	// RunAgain counts the jobs run more than once, Reasons the extra runs
	// by what ended the run before them (Event outcome, "no end" when
	// its worker never reported one).
	RunAgain int            `json:"run_again"`
	Reasons  map[string]int `json:"run_again_reasons"`
	// LongestGap is the longest time without a completion between the
	// first and the last, AtS when it began (seconds since the start),
	// After the fault last begun before it.
	LongestGap      time.Duration `json:"longest_gap"`
	LongestGapAtS   float64       `json:"longest_gap_at_s"`
	LongestGapAfter string        `json:"longest_gap_after"`
	FaultGaps       []FaultGap    `json:"fault_gaps"`
	Kills           int           `json:"kills"`
	Codes           map[int]int64 `json:"codes"`
	// Baseline figures, before the first fault: completions per second,
	// and enqueue-to-start (from the producer transaction's return to the
	// job's first start).
	BaselineRate  float64       `json:"baseline_jobs_per_s"`
	BaselineStart Percentiles   `json:"baseline_enqueue_to_start"`
	ChaosStart    Percentiles   `json:"chaos_enqueue_to_start"`
	Elapsed       time.Duration `json:"elapsed"`
	Violations    []string      `json:"violations"`
}

// Percentiles of a latency.
type Percentiles struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

// FaultGap is the longest time without a completion from a fault's start
// to 10 s after its end.
type FaultGap struct {
	Fault string        `json:"fault"`
	AtS   float64       `json:"at_s"`
	Took  time.Duration `json:"took"`
	Gap   time.Duration `json:"gap"`
}

// OK says whether the run found no violation.
func (v *Verdict) OK() bool { return len(v.Violations) == 0 }

func (v *Verdict) violate(format string, args ...any) {
	v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
}

// maxListed bounds the violations of one kind listed one by one.
const maxListed = 20

type limiter map[string]int

func (l limiter) add(v *Verdict, kind, format string, args ...any) {
	l[kind]++
	if l[kind] <= maxListed {
		v.violate(kind+": "+format, args...)
	}
}

func (l limiter) flush(v *Verdict) {
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if n := l[k]; n > maxListed {
			v.violate("%s: %d more not listed (%d in all)", k, n-maxListed, n)
		}
	}
}

// Check holds the history against what the queue promises:
//
//   - every job of a committed producer transaction (the batch marker is
//     there) has its app record and finished exactly once: completed, or
//     dead-lettered by its own handler for the workload's reason
//     (TypePoison, which must then be in the dead letters);
//   - no job of a producer transaction that failed, and no job of an
//     attempt of it that did not commit, exists: no app record, no
//     completion, no run, not queued, not dead;
//   - the CompleteWith effect applied once per job (its counter is 1, one
//     completion record);
//   - no completion committed under a stale token: each was made by the
//     job's last claim (token, attempt and worker);
//   - every cron occurrence completed at most once, and each chain goes on
//     (one pending occurrence, later than every completed one).
func Check(h History) Verdict {
	v := Verdict{Reasons: map[string]int{}, Codes: h.Codes}
	lim := limiter{}
	for _, p := range h.Problems {
		v.violate("harness: %s", p)
	}
	rec := h.Records
	if rec == nil {
		rec = &Records{Enq: map[quick.ID]Enq{}, Count: map[quick.ID]int64{}}
	}
	for _, b := range rec.Bad {
		lim.add(&v, "corrupt record", "%s", b)
	}

	// Producer transactions: which jobs exist, and which must not.
	want := map[quick.ID]string{}  // committed jobs -> task type
	ghost := map[quick.ID]string{} // generated by an attempt that did not commit -> where
	for _, b := range h.Batches {
		v.Batches++
		switch b.Outcome {
		case Failed:
			v.BatchesFailed++
		case Unknown:
			v.BatchesUnknown++
		}
		committed := -1
		if b.Found {
			for i, a := range b.Attempts {
				if slices.Equal(a, b.Marker) {
					committed = i
				}
			}
		}
		switch {
		case b.Outcome == Committed && !b.Found:
			lim.add(&v, "lost producer transaction", "producer %d batch %d committed, but its marker is missing", b.Producer, b.Batch)
		case b.Outcome == Failed && b.Found:
			lim.add(&v, "failed producer transaction applied", "producer %d batch %d failed (%s) but its marker is there", b.Producer, b.Batch, b.Err)
		case b.Found && committed < 0:
			lim.add(&v, "corrupt marker", "producer %d batch %d: its marker lists IDs no attempt generated", b.Producer, b.Batch)
		}
		if b.Outcome == Unknown && b.Found {
			v.UnknownApplied++
		}
		for i, a := range b.Attempts {
			for j, id := range a {
				if i == committed {
					want[id] = b.Types[j]
					continue
				}
				ghost[id] = fmt.Sprintf("producer %d batch %d attempt %d (%s)", b.Producer, b.Batch, i+1, b.Outcome)
			}
		}
	}
	v.Jobs = len(want)
	v.GhostsChecked = len(ghost)

	// What the workers ran, by job.
	starts := map[quick.ID][]Event{}
	ends := map[quick.ID][]Event{}
	for _, e := range h.Events {
		switch e.Kind {
		case EvStart:
			starts[e.Job] = append(starts[e.Job], e)
			v.Runs++
		case EvEnd:
			ends[e.Job] = append(ends[e.Job], e)
		}
	}
	done := map[quick.ID][]DoneRec{}
	for _, d := range rec.Done {
		done[d.ID] = append(done[d.ID], d)
	}
	queued, dead := map[quick.ID]string{}, map[quick.ID]string{}
	for tt, ids := range h.Queued {
		for _, id := range ids {
			queued[id] = tt
		}
	}
	for tt, ids := range h.Dead {
		for _, id := range ids {
			dead[id] = tt
		}
	}

	for id, where := range ghost {
		_, enq := rec.Enq[id]
		exists := enq || len(done[id]) > 0 || rec.Count[id] > 0 || len(starts[id]) > 0 || queued[id] != "" || dead[id] != ""
		if exists {
			lim.add(&v, "job of a failed producer transaction exists", "%s from %s: enq record %v, completions %d, runs %d, queued %q, dead %q",
				id, where, enq, len(done[id]), len(starts[id]), queued[id], dead[id])
		}
	}
	for id := range rec.Enq {
		if _, ok := want[id]; !ok {
			if _, g := ghost[id]; !g {
				lim.add(&v, "unknown job", "%s has an enq record but no producer transaction generated it", id)
			}
		}
	}

	for id, tt := range want {
		if _, ok := rec.Enq[id]; !ok {
			lim.add(&v, "missing app record", "job %s (%s): committed, but its enq record is missing", id, tt)
		}
		ds := done[id]
		switch {
		case len(ds) == 0 && queued[id] != "":
			lim.add(&v, "not finished", "job %s (%s) is still queued", id, tt)
			continue
		case len(ds) == 0 && dead[id] != "":
			lim.add(&v, "dead-lettered", "job %s (%s) was dead-lettered, not by the workload", id, tt)
			continue
		case len(ds) == 0:
			lim.add(&v, "LOST", "job %s (%s): committed, never finished, not queued, not dead (runs %d)", id, tt, len(starts[id]))
			continue
		case len(ds) > 1 || rec.Count[id] != 1:
			lim.add(&v, "duplicate effect", "job %s (%s): %d completion records, effect counter %d", id, tt, len(ds), rec.Count[id])
		}
		d := ds[0]
		switch {
		case d.Dead && tt != TypePoison:
			lim.add(&v, "dead-lettered", "job %s (%s) dead-lettered itself", id, tt)
		case tt == TypePoison && !d.Dead:
			lim.add(&v, "poison completed", "job %s (%s) completed; it must dead-letter itself", id, tt)
		case d.Dead && dead[id] != tt:
			lim.add(&v, "dead letter missing", "job %s dead-lettered itself but is not in the %s dead letters", id, tt)
		case d.Dead:
			v.DeadLettered++
		default:
			v.Completed++
		}
		if queued[id] != "" {
			lim.add(&v, "finished and queued", "job %s (%s) finished but is still queued", id, tt)
		}
		checkToken(&v, lim, id, d, starts[id])
	}

	// Dead letters and queued jobs that no producer transaction committed.
	for id, tt := range dead {
		if _, ok := want[id]; !ok && tt != TypeCron {
			if _, g := ghost[id]; !g {
				lim.add(&v, "unknown job", "%s is dead-lettered (%s) but no producer transaction generated it", id, tt)
			}
		}
	}

	checkCronChains(h, &v, lim, done, starts, queued, dead)
	runAgain(&v, lim, starts, ends, done)
	gaps(h, &v, rec)
	latencies(h, &v, want, starts)
	for _, f := range h.Faults {
		v.Kills += f.Kills
	}
	if h.Start > 0 && len(rec.Done) > 0 {
		last := slices.MaxFunc(rec.Done, func(a, b DoneRec) int { return int(a.At - b.At) })
		v.Elapsed = time.Duration(last.At*int64(time.Millisecond) - h.Start)
	}
	lim.flush(&v)
	sort.Strings(v.Violations)
	return v
}

// checkToken: the completion must come from the job's last claim, the
// start with the highest attempt (at one attempt a per-job claim, which
// takes a short-job hand-out over, is the later one).
func checkToken(v *Verdict, lim limiter, id quick.ID, d DoneRec, starts []Event) {
	if len(starts) == 0 {
		lim.add(v, "completion without a run", "job %s: completed by %s at attempt %d, but no worker reported a run", id, d.Worker, d.Attempt)
		return
	}
	last := starts[0]
	for _, s := range starts[1:] {
		if !claimedBefore(s, last) {
			last = s
		}
	}
	if d.Token != last.Token || d.Attempt != last.Attempt || d.Worker != last.Worker {
		lim.add(v, "stale token", "job %s: completion under token %d (attempt %d, %s); its last claim was token %d (attempt %d, %s)",
			id, d.Token, d.Attempt, d.Worker, last.Token, last.Attempt, last.Worker)
	}
}

// claimedBefore orders two runs of a job by their claims: the lower
// attempt first; at one attempt a short-job hand-out before the per-job
// claim of the worker that took its lane over; else the earlier start.
func claimedBefore(a, b Event) bool {
	switch {
	case a.Attempt != b.Attempt:
		return a.Attempt < b.Attempt
	case a.Short != b.Short:
		return a.Short
	}
	return a.At < b.At
}

// checkCronChains: every occurrence completed at most once and by its
// last claim; every one that ran is completed or pending; each chain has
// its one pending occurrence after its last completed one.
func checkCronChains(h History, v *Verdict, lim limiter, done map[quick.ID][]DoneRec, starts map[quick.ID][]Event, queued, dead map[quick.ID]string) {
	v.CronChains = len(h.Cron)
	lastDone := map[string]int64{}
	times := map[string][]int64{}
	seen := map[string]map[int64]quick.ID{}
	for id, ds := range done {
		d := ds[0]
		if d.Schedule == "" {
			continue
		}
		v.CronOccurrences++
		if len(ds) > 1 {
			lim.add(v, "cron occurrence completed twice", "%s at %s: %d completion records", d.Schedule, msTime(d.ScheduledAt), len(ds))
		}
		if seen[d.Schedule] == nil {
			seen[d.Schedule] = map[int64]quick.ID{}
		}
		if other, dup := seen[d.Schedule][d.ScheduledAt]; dup {
			lim.add(v, "cron occurrence completed twice", "%s at %s as %s and %s", d.Schedule, msTime(d.ScheduledAt), other, id)
		}
		seen[d.Schedule][d.ScheduledAt] = id
		lastDone[d.Schedule] = max(lastDone[d.Schedule], d.ScheduledAt)
		times[d.Schedule] = append(times[d.Schedule], d.ScheduledAt)
		checkToken(v, lim, id, d, starts[id])
	}
	next := map[quick.ID]bool{}
	for _, e := range h.Cron {
		next[e.NextID] = true
		switch {
		case !e.Alive || e.NextID.IsZero():
			lim.add(v, "cron chain broken", "%s: no pending occurrence after %s", e.Name, msTime(lastDone[e.Name]))
		case queued[e.NextID] != TypeCron:
			lim.add(v, "cron chain broken", "%s: its next occurrence %s is not queued", e.Name, e.NextID)
		case e.Next <= lastDone[e.Name]:
			lim.add(v, "cron chain out of order", "%s: next occurrence at %s is not after its last completed one at %s", e.Name, msTime(e.Next), msTime(lastDone[e.Name]))
		}
		// Under RunOnce a late occurrence stands for the times it missed:
		// count the steps between completed times that are longer than the
		// shortest (the spec's period), as a figure, not a violation.
		ts := times[e.Name]
		slices.Sort(ts)
		if len(ts) > 2 {
			period := ts[1] - ts[0]
			for i := 2; i < len(ts); i++ {
				period = min(period, ts[i]-ts[i-1])
			}
			for i := 1; i < len(ts); i++ {
				if ts[i]-ts[i-1] > period {
					v.CronCollapsed++
				}
			}
		}
	}
	for id, tt := range queued {
		if tt == TypeCron && !next[id] {
			lim.add(v, "cron occurrence queued twice", "%s is queued but no chain's next occurrence", id)
		}
	}
	for id, tt := range dead {
		if tt == TypeCron {
			lim.add(v, "cron occurrence dead-lettered", "%s", id)
		}
	}
	for id, ss := range starts {
		if ss[0].Note != "cron" || len(done[id]) > 0 || queued[id] == TypeCron || dead[id] == TypeCron {
			continue
		}
		lim.add(v, "cron occurrence lost", "%s ran (%d runs) but was neither completed nor is it queued", id, len(ss))
	}
}

// runAgain counts the jobs run more than once, and the extra runs by what
// ended the run before each; a claim after a completed run (its handler
// returned nil after the completion committed) is a violation.
//
// Runs are taken in the order of their claims (attempt; at one attempt a
// short-job hand-out before the per-job claim that takes it over), not of
// their starts: a worker holds prefetched jobs until a slot frees, and a
// frozen one starts them when it thaws, after their leases lapsed and the
// next holder may have completed them. Such a stale run's writes must all
// be refused (the stale-token check); its late start is no violation.
func runAgain(v *Verdict, lim limiter, starts, ends map[quick.ID][]Event, done map[quick.ID][]DoneRec) {
	for id, ss := range starts {
		if len(ss) < 2 {
			continue
		}
		v.RunAgain++
		sort.Slice(ss, func(i, j int) bool { return claimedBefore(ss[i], ss[j]) })
		es := ends[id]
		for i := 1; i < len(ss); i++ {
			prev := ss[i-1]
			reason := "no end reported"
			for _, e := range es {
				if e.Worker == prev.Worker && e.Token == prev.Token && e.Attempt == prev.Attempt {
					reason = e.Note
				}
			}
			switch {
			case prev.Note == "cron":
				reason = "cron: occurrence run again"
			case prev.Short && reason == "no end reported":
				reason = "short hand-out, no end reported"
			}
			if reason == "ok" && len(done[id]) > 0 {
				lim.add(v, "run after completion", "job %s ran again (%s, attempt %d) after %s completed it at attempt %d", id, ss[i].Worker, ss[i].Attempt, prev.Worker, prev.Attempt)
			}
			v.Reasons[reason]++
		}
	}
}

// gaps finds the longest time without a completion, overall and around
// each fault.
func gaps(h History, v *Verdict, rec *Records) {
	ats := make([]int64, 0, len(rec.Done))
	for _, d := range rec.Done {
		ats = append(ats, d.At*int64(time.Millisecond))
	}
	slices.Sort(ats)
	longest := func(from, to int64) (gap time.Duration, at int64) {
		i, _ := slices.BinarySearch(ats, from)
		prev := from
		if i > 0 {
			prev = ats[i-1]
		}
		for ; i < len(ats) && ats[i] <= to; i++ {
			if g := time.Duration(ats[i] - max(prev, from)); g > gap {
				gap, at = g, max(prev, from)
			}
			prev = ats[i]
		}
		return gap, at
	}
	if len(ats) > 1 {
		g, at := longest(ats[0], ats[len(ats)-1])
		v.LongestGap = g
		if h.Start > 0 {
			v.LongestGapAtS = float64(at-h.Start) / 1e9
		}
		for _, f := range h.Faults {
			if f.Start <= at+int64(g) && f.Start > 0 {
				v.LongestGapAfter = fmt.Sprintf("%s (at %.1fs)", f.Name, f.StartS)
			}
		}
	}
	for _, f := range h.Faults {
		g, _ := longest(f.Start, f.End+int64(10*time.Second))
		v.FaultGaps = append(v.FaultGaps, FaultGap{Fault: f.Name, AtS: f.StartS, Took: time.Duration(f.End - f.Start), Gap: g})
	}
	if h.BaselineEnd > h.Start && h.Start > 0 {
		n := 0
		for _, a := range ats {
			if a >= h.Start && a < h.BaselineEnd {
				n++
			}
		}
		v.BaselineRate = float64(n) / (float64(h.BaselineEnd-h.Start) / 1e9)
	}
}

// latencies: enqueue-to-start of the jobs enqueued before the first fault
// and after it.
func latencies(h History, v *Verdict, want map[quick.ID]string, starts map[quick.ID][]Event) {
	var base, chaos []time.Duration
	for _, b := range h.Batches {
		if !b.Found {
			continue
		}
		for _, id := range b.Marker {
			ss := starts[id]
			if len(ss) == 0 {
				continue
			}
			first := slices.MinFunc(ss, func(a, b Event) int { return int(a.At - b.At) })
			d := max(time.Duration(first.At-b.Done), 0)
			if b.Done < h.BaselineEnd {
				base = append(base, d)
			} else {
				chaos = append(chaos, d)
			}
		}
	}
	v.BaselineStart, v.ChaosStart = percentiles(base), percentiles(chaos)
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(int(q*float64(len(ds))), len(ds)-1)] }
	return Percentiles{N: len(ds), P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1]}
}

func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}
