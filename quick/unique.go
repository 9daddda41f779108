package quick

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// UniqueHolder returns the job that holds a task type's unique key: the
// pending or running job enqueued with it. It returns ErrNotFound when the
// key is free (never taken, released when its job finished, or left by a
// job that was dead-lettered). Consoles use it to find a job by its key.
//
// Keys: a point read of S(1,"u",type,key) and of the holder's record
// S(1,"j",id) (a job has none until it is dead-lettered);
// snapshot reads, nothing written.
func (q *Queue) UniqueHolder(ctx context.Context, taskType, uniqueKey string) (ID, error) {
	if err := validTaskType(taskType); err != nil {
		return ID{}, err
	}
	if uniqueKey == "" || len(uniqueKey) > MaxUniqueKeyLen {
		return ID{}, fmt.Errorf("%w: unique key of %d bytes (want 1 to %d)", ErrInvalidOption, len(uniqueKey), MaxUniqueKeyLen)
	}
	var id ID
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		id = ID{}
		snap := tr.Snapshot()
		v, err := snap.Get(q.k.uniqKey(taskType, uniqueKey)).Get()
		if err != nil || v == nil {
			return err
		}
		if len(v) != len(ID{}) {
			return fmt.Errorf("%w: unique key value of %d bytes", ErrCorrupt, len(v))
		}
		rv, err := snap.Get(q.k.jobKey(ID(v))).Get()
		if err != nil {
			return err
		}
		if rv == nil {
			// A live job has no record; whatever ends it clears the
			// unique key.
			id = ID(v)
			return nil
		}
		// Only a dead letter has a record, and a dead holder frees the key.
		_, err = decodeDeadRecord(ID(v), rv)
		return err
	})
	if err != nil {
		return ID{}, fmt.Errorf("quick: unique key %q of %s: %w", uniqueKey, taskType, err)
	}
	if id.IsZero() {
		return ID{}, fmt.Errorf("%w: no job holds unique key %q of %s", ErrNotFound, uniqueKey, taskType)
	}
	return id, nil
}
