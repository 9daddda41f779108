package quick

import (
	"context"

	"github.com/quickfdb/quickfdb/kv"
)

// HasTaskType reports whether a job of taskType was ever enqueued in the
// queue (the task type registry, S(1,"t",type), holds it), so tools can
// tell a mistyped task type from an empty one.
//
// Keys: one snapshot point read of S(1,"t",taskType).
func (q *Queue) HasTaskType(ctx context.Context, taskType string) (bool, error) {
	var found bool
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Snapshot().Get(q.k.typeKey(taskType)).Get()
		found = v != nil
		return err
	})
	return found, err
}

// TaskTypes lists the task types ever enqueued.
//
// Keys: one snapshot range read of S(1,"t"), the task type registry (one
// key per task type, never per job).
func (q *Queue) TaskTypes(ctx context.Context) ([]string, error) {
	var out []string
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		kvs, err := tr.Snapshot().GetRange(rangeOf(q.k.types), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := q.k.types.Unpack(p.Key)
			if err != nil || len(t) != 1 {
				continue
			}
			if s, ok := t[0].(string); ok {
				out = append(out, s)
			}
		}
		return nil
	})
	return out, err
}
