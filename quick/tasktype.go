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
