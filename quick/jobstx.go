package quick

import (
	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
)

func init() { testhook.JobsTx = jobsTx }

// jobsTx lists up to limit of a task type's scheduled, ready and leased
// jobs, with their payloads and item spaces, in rt: quicktest's view of what
// a test enqueued, including its own uncommitted writes when rt is the
// caller's transaction. more is set when the task type holds more.
//
// Every lane that holds a job has a pointer (zone.go), so walking the task
// type's pointer index, priority by priority, and reading each pointed
// lane's keys finds every job.
//
// Keys: per priority one range read of S (2, "p", type, prio) of at most
// limit+1 pointers, then per pointer one range read of its lane,
// Z (0, prio, lane), of at most limit+1 keys in all, and a point read of
// Z (3, id) per job whose payload is not inline. The reads are snapshot
// reads: asserting adds no conflicts to the caller's transaction.
func jobsTx(rt kv.ReadTransaction, q *Queue, taskType string, limit int) (jobs []JobInfo, more bool, err error) {
	if err := validTaskType(taskType); err != nil {
		return nil, false, err
	}
	snap := rt.Snapshot()
	nowMs := q.Now().UnixMilli()
	for _, prio := range priorities {
		ptrs, err := snap.GetRange(q.zk.pointersUntil(taskType, prio, -1), kv.RangeOptions{Limit: limit + 1}).GetSliceWithError()
		if err != nil {
			return nil, false, err
		}
		for _, p := range ptrs {
			e, err := q.zk.parsePointer(p)
			if err != nil {
				continue
			}
			l := e.lane()
			kvs, err := snap.GetRange(l.laneRange(), kv.RangeOptions{Limit: limit + 1 - len(jobs)}).GetSliceWithError()
			if err != nil {
				return nil, false, err
			}
			for _, kvp := range kvs {
				if len(jobs) == limit {
					return jobs, true, nil
				}
				jk, err := l.z.parseJobKey(kvp.Key)
				if err != nil {
					continue
				}
				var v zjobValue
				if v.unmarshal(kvp.Value) != nil {
					continue
				}
				payload := clone(v.Payload)
				if v.Flags&flagBlob != 0 {
					if payload, err = snap.Get(l.z.blobKey(jk.ID)).Get(); err != nil {
						return nil, false, err
					}
				}
				info := zinfo(l, jk, &v, payload, nowMs)
				info.zl = &zoneRef{lane: l, vestMs: jk.VestMs, v: v}
				jobs = append(jobs, info)
			}
		}
	}
	return jobs, false, nil
}
