package quick

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Cancel ends a job that is scheduled, ready or leased, or takes it out of
// the dead letters, as cancelled: it is deleted, unless its retention
// (TaskTypeOptions.Retain, NewJob.Retain) keeps a finished record of it,
// which Get then shows as StateCancelled. A cancelled job is never a dead
// letter. A worker holding it loses its lease: its next lease operation
// returns ErrLeaseLost. A job already completed or cancelled is ErrNotFound.
func (q *Queue) Cancel(ctx context.Context, id ID) error {
	applied := false
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if maybeCommitted && applied && (info.State.Done() || IsNotFound(err)) {
			return nil // the earlier attempt's cancel committed
		}
		if err != nil {
			return err
		}
		if err := q.cancelTx(tr, info, key); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("quick: cancel %s: %w", id, err)
	}
	return nil
}

// cancelTx deletes a job lookup found (info, and its job key).
//
// Keys: for a live job, cancelZoneTx's; for a dead letter, a read-conflict
// key on S(1,"j",id), then clears it and forget's keys, and sets its
// outcome (Waitable) and finished record (retention).
func (q *Queue) cancelTx(tr kv.Transaction, info JobInfo, key []byte) error {
	id := info.ID
	if info.State.Done() {
		return fmt.Errorf("%w: %s already finished (%s)", ErrNotFound, id, info.State)
	}
	if info.zl != nil && !info.zl.dead {
		return q.cancelZoneTx(tr, info, key)
	}
	if info.State != StateDead {
		return fmt.Errorf("%w: %s is %s but has no job key", ErrCorrupt, id, info.State)
	}
	// Conflict with a requeue of the dead letter meanwhile.
	if err := tr.AddReadConflictKey(q.k.jobKey(id)); err != nil {
		return err
	}
	q.forget(tr, info)
	if info.Waitable {
		q.recordOutcome(tr, id, flagWaitable, OutcomeCancelled, int64(info.Attempt), "")
	}
	q.retainTx(tr, finish{
		id: id, kind: OutcomeCancelled, taskType: info.TaskType, itemSpace: info.ItemSpace, prio: info.Priority,
		v: deadValue(info), payload: info.Payload, now: q.Now(),
	})
	return nil
}

// deadValue is the job value a cancelled dead letter's finished record is
// made of: the payload counts as inline only when it is small enough to
// keep.
func deadValue(info JobInfo) *zjobValue {
	v := &zjobValue{
		Attempt: int64(info.Attempt), MaxAttempts: int64(info.MaxAttempts), UniqueKey: info.UniqueKey,
		LastError: info.LastError, CreatedAtMs: info.CreatedAt.UnixMilli(), RetainMs: info.retainMs, History: info.Errors,
	}
	if info.Waitable {
		v.Flags |= flagWaitable
	}
	if len(info.Payload) > maxRetainedPayload {
		v.Flags |= flagBlob
	} else {
		v.Payload = info.Payload
	}
	return v
}

// forget clears a dead letter: its record, checkpoint, dead-letter key and
// count, and what its zone may still hold of it.
//
// Keys: clears S(1,"j",id), S(1,"c",id), S(1,"d",type,deadAt,id), the
// zone's blob and checkpoint keys of id; adds -1 to S(1,"dn",type).
func (q *Queue) forget(tr kv.Transaction, info JobInfo) {
	tr.Clear(q.k.jobKey(info.ID))
	tr.Clear(q.k.ckptKey(info.ID))
	if info.zl != nil {
		q.forgetZone(tr, info)
	}
	tr.Clear(q.k.deadKey(info.TaskType, info.DeadAt.UnixMilli(), info.ID))
	tr.Add(q.k.deadCountKey(info.TaskType), le64(-1))
}
