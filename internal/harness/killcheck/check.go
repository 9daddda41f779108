package killcheck

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// MaxJobs bounds the jobs of one scenario: the checker reads every record
// of the run in one transaction per kind, so the run must stay small.
const MaxJobs = 1000

// Resume is what a job's completion must show after its worker was
// killed: the run that completed it resumed from a checkpointed step in
// [Min, Max], at attempt 2 or later, on a worker other than Killed.
type Resume struct {
	Min, Max int
	Killed   string
}

// Expect is what the checker holds the run's records against.
type Expect struct {
	// IDs are the jobs the producer reported inserted.
	IDs []quick.ID
	// Resumes are the jobs a killed worker was running.
	Resumes map[quick.ID]Resume
	// Before are completion records read before a server kill: each must
	// still be there, unchanged.
	Before map[quick.ID]Done
}

// Report is what the checker checked, and what failed.
type Report struct {
	Checked  []string
	Problems []string
}

// OK reports whether nothing failed.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) ok(format string, args ...any) {
	r.Checked = append(r.Checked, fmt.Sprintf(format, args...))
}

func (r *Report) bad(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Records are the app subspace's records of a run, read in one
// transaction.
type Records struct {
	Enq   map[quick.ID]bool
	Done  map[quick.ID]Done
	Count map[quick.ID]int64
	// Bad lists records that do not decode.
	Bad []string
}

// ReadRecords reads every record of the run, in one read-only
// transaction: the ranges A("enq"), A("done") and A("count"), at most
// MaxJobs+1 keys each (more is reported as a problem by Check).
func ReadRecords(ctx context.Context, db kv.Database, keys Keys) (*Records, error) {
	var rec *Records
	err := db.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
		rec = &Records{Enq: map[quick.ID]bool{}, Done: map[quick.ID]Done{}, Count: map[quick.ID]int64{}}
		for _, kind := range []string{"enq", "done", "count"} {
			sub := keys.App.Sub(kind)
			begin, end := sub.Range()
			kvs, err := rt.GetRange(kv.KeyRange{Begin: begin, End: end}, kv.RangeOptions{Limit: MaxJobs + 1}).GetSliceWithError()
			if err != nil {
				return err
			}
			if len(kvs) > MaxJobs {
				rec.Bad = append(rec.Bad, fmt.Sprintf("more than %d %s records: the run is larger than the checker reads", MaxJobs, kind))
				kvs = kvs[:MaxJobs]
			}
			for _, e := range kvs {
				id, err := recordID(sub, e.Key)
				if err != nil {
					rec.Bad = append(rec.Bad, fmt.Sprintf("%s key %x: %v", kind, e.Key, err))
					continue
				}
				switch kind {
				case "enq":
					rec.Enq[id] = true
				case "done":
					var d Done
					if err := json.Unmarshal(e.Value, &d); err != nil {
						rec.Bad = append(rec.Bad, fmt.Sprintf("done record of %s: %v", id, err))
						continue
					}
					rec.Done[id] = d
				case "count":
					if len(e.Value) != 8 {
						rec.Bad = append(rec.Bad, fmt.Sprintf("count of %s: %d bytes, want 8", id, len(e.Value)))
						continue
					}
					rec.Count[id] = int64(binary.LittleEndian.Uint64(e.Value))
				}
			}
		}
		return nil
	})
	return rec, err
}

var errBadKey = errors.New("not a (job ID) key")

func recordID(sub tuple.Subspace, key []byte) (quick.ID, error) {
	t, err := sub.Unpack(key)
	if err != nil {
		return quick.ID{}, err
	}
	if len(t) != 1 {
		return quick.ID{}, errBadKey
	}
	b, ok := t[0].([]byte)
	if !ok || len(b) != len(quick.ID{}) {
		return quick.ID{}, errBadKey
	}
	return quick.ID(b), nil
}

// Check holds the run's records and the queue's state against exp.
func Check(ctx context.Context, q *quick.Queue, keys Keys, exp Expect) (*Report, error) {
	r := &Report{}
	if len(exp.IDs) > MaxJobs {
		return nil, fmt.Errorf("killcheck: %d jobs, at most %d", len(exp.IDs), MaxJobs)
	}
	rec, err := ReadRecords(ctx, q.DB(), keys)
	if err != nil {
		return nil, fmt.Errorf("killcheck: read the run's records: %w", err)
	}
	for _, b := range rec.Bad {
		r.bad("corrupt record: %s", b)
	}
	want := map[quick.ID]bool{}
	for _, id := range exp.IDs {
		want[id] = true
	}

	// Every job the producer reported has its "enq" record, and no other.
	missing := 0
	for id := range want {
		if !rec.Enq[id] {
			missing++
			r.bad("job %s: the producer reported it inserted, but its enq record is missing", id)
		}
	}
	for id := range rec.Enq {
		if !want[id] {
			r.bad("job %s: an enq record the producer did not report", id)
		}
	}
	if missing == 0 && len(rec.Enq) == len(want) {
		r.ok("%d jobs inserted, each with its enq record written in the insert's transaction", len(want))
	}

	// Each completed exactly once: the count its completing transaction
	// adds to is 1, and its record is there.
	once, workers, attempts := 0, map[string]int{}, map[int]int{}
	for id := range rec.Enq {
		n, d, has := rec.Count[id], rec.Done[id], false
		_, has = rec.Done[id]
		switch {
		case n == 0 && !has:
			r.bad("job %s: LOST: never completed (no completion record)", id)
		case n != 1:
			r.bad("job %s: completed %d times by the queue's own writes (count %d)", id, n, n)
		case !has:
			r.bad("job %s: count 1 but no completion record", id)
		default:
			once++
			workers[d.Worker]++
			attempts[d.Attempt]++
		}
	}
	for id := range rec.Count {
		if !rec.Enq[id] {
			r.bad("job %s: completed but never inserted by the producer", id)
		}
	}
	if once == len(rec.Enq) {
		r.ok("%d/%d jobs completed exactly once (count key = 1, written in CompleteWith's transaction); by worker: %s; by attempt: %s",
			once, len(rec.Enq), formatCounts(workers), formatCounts(attempts))
	}

	// The queue agrees: every job is gone or finished, none is listed, no
	// dead letters.
	left := 0
	for id := range want {
		info, err := q.Get(ctx, id)
		switch {
		case quick.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("killcheck: get job %s: %w", id, err)
		case info.State != quick.StateFinished:
			left++
			r.bad("job %s: still in the queue: %s (attempt %d, holder %q)", id, info.State, info.Attempt, info.Holder)
		}
	}
	page, err := q.List(ctx, quick.ListOptions{TaskType: TaskType, Limit: 10})
	if err != nil {
		return nil, fmt.Errorf("killcheck: list jobs: %w", err)
	}
	for _, j := range page.Jobs {
		if !want[j.ID] {
			r.bad("job %s: in the queue (%s) but not the producer's", j.ID, j.State)
		}
	}
	dead, err := q.DeadCount(ctx, TaskType)
	if err != nil {
		return nil, fmt.Errorf("killcheck: count dead letters: %w", err)
	}
	if dead != 0 {
		r.bad("%d dead letters", dead)
	}
	if left == 0 && len(page.Jobs) == 0 && dead == 0 {
		r.ok("the queue holds none of them: Get says gone or finished for each, the %s listing is empty, 0 dead letters", TaskType)
	}

	// Jobs a killed worker held resumed from its last checkpoint elsewhere.
	for _, id := range sortedIDs(exp.Resumes) {
		want := exp.Resumes[id]
		d, ok := rec.Done[id]
		switch {
		case !ok:
			// Reported above as lost.
		case d.Worker == want.Killed:
			r.ok("job %s: completed by %s itself before it was killed (its report was cut short)", id, d.Worker)
		case d.Attempt < 2 || d.ResumedFrom < want.Min || d.ResumedFrom > want.Max:
			r.bad("job %s: completed by %s at attempt %d resuming from step %d; want attempt >= 2 and a resume from step %s (%s's last checkpoint)",
				id, d.Worker, d.Attempt, d.ResumedFrom, span(want.Min, want.Max), want.Killed)
		case want.Max == 0:
			r.ok("job %s: %s killed before the job's first checkpoint; %s ran it from the start at attempt %d and completed it",
				id, want.Killed, d.Worker, d.Attempt)
		default:
			r.ok("job %s: %s killed after checkpointing step %s; %s resumed it from step %d at attempt %d and completed it",
				id, want.Killed, span(want.Min, want.Max), d.Worker, d.ResumedFrom, d.Attempt)
		}
	}

	// Completions made before a server kill survived it, unchanged.
	if len(exp.Before) > 0 {
		changed := 0
		for id, was := range exp.Before {
			if now, ok := rec.Done[id]; !ok || now != was {
				changed++
				r.bad("job %s: completion record before the server kill %+v, after %+v (present %v)", id, was, now, ok)
			}
		}
		if changed == 0 {
			r.ok("the %d completion records read before the server kill are all still there, unchanged", len(exp.Before))
		}
	}
	return r, nil
}

func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d or %d", lo, hi)
}

func sortedIDs[V any](m map[quick.ID]V) []quick.ID {
	ids := make([]quick.ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b quick.ID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

func formatCounts[K comparable](m map[K]int) string {
	keys := make([]string, 0, len(m))
	byKey := map[string]int{}
	for k, n := range m {
		s := fmt.Sprint(k)
		keys = append(keys, s)
		byKey[s] = n
	}
	slices.Sort(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", k, byKey[k])
	}
	return out
}
