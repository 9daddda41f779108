package quick

import (
	"github.com/quickfdb/quickfdb/kv"
)

// jobsTx (schema 1; testJobsTx in worktest.go calls it) lists up to limit of a task type's scheduled, ready and leased
// jobs, with their records (payload, item space), in rt: quicktest's view of
// what a test enqueued, including its own uncommitted writes when rt is the
// caller's transaction. more is set when the task type holds more.
//
// Keys: one range read per lane over S(1,"s",type,lane) (at most limit+1
// keys in all), then the lookup's point reads for each job found. The reads
// are snapshot reads: asserting adds no conflicts to the caller's
// transaction.
func jobsTx(rt kv.ReadTransaction, q *Queue, taskType string, limit int) (jobs []JobInfo, more bool, err error) {
	if err := validTaskType(taskType); err != nil {
		return nil, false, err
	}
	snap := rt.Snapshot()
	var ids []ID
	for lane := 0; lane < q.lanes && len(ids) <= limit; lane++ {
		kvs, err := snap.GetRange(q.k.laneAll(taskType, lane), kv.RangeOptions{Limit: limit + 1 - len(ids)}).GetSliceWithError()
		if err != nil {
			return nil, false, err
		}
		for _, p := range kvs {
			if sk, err := q.k.parseSched(p.Key); err == nil {
				ids = append(ids, sk.ID)
			}
		}
	}
	if len(ids) > limit {
		ids, more = ids[:limit], true
	}
	for _, id := range ids {
		info, _, err := q.lookup(snap, id)
		if err != nil {
			if IsNotFound(err) {
				continue
			}
			return nil, false, err
		}
		jobs = append(jobs, info)
	}
	return jobs, more, nil
}
