package quick

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// RunNow makes a scheduled job vest now, keeping its attempts, payload and
// checkpoint, and wakes the task type's idle workers. A job that is
// already ready is left as it is (nil error); a leased one, a dead letter
// (see Requeue) or a finished one is an error.
//
// A trackable zones-layout job (TaskTypeOptions.Trackable) moves to now in
// its lane, whose pointer is pulled to now if it vested later.
//
// A retry after commit_unknown_result that finds the job ready, leased or
// finished (a worker took it since) is this call's own earlier commit.
//
// Keys: the lookup's reads (record, schedule key), then clears the old
// schedule key, sets the new one and the record, adds 1 to S(1,"wake",type).
// For a zones job: the lookup index and job key, then clears the old job
// key, sets the new one and S(2,"i",id), may move the lane state and
// pointer (cover), adds 1 to S(1,"wake",type).
func (q *Queue) RunNow(ctx context.Context, id ID) error {
	applied := false
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if maybeCommitted && applied && (IsNotFound(err) || err == nil && info.State != StateScheduled) {
			return nil // the earlier attempt moved it; a worker may have taken it since
		}
		if err != nil {
			return err
		}
		switch info.State {
		case StateReady:
			return nil
		case StateScheduled:
		default:
			return fmt.Errorf("%w: %s is %s: only a scheduled job can run now", ErrInvalidOption, id, info.State)
		}
		if info.zl != nil {
			if err := q.runNowZoneTx(tr, info, key, q.Now().UnixMilli()); err != nil {
				return err
			}
			applied = true
			return nil
		}
		// TODO(issue 21, onelayout): schema-1 branch removed; every live
		// job is in a zone.
		return fmt.Errorf("%w: %s has no job key", ErrNotFound, id)
	})
	if err != nil {
		return fmt.Errorf("quick: run %s now: %w", id, err)
	}
	return nil
}
