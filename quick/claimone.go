package quick

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// claimOne (schema 1; claimByID in worktest.go calls it) leases one job by ID, whatever its vesting time, for quicktest's
// Work: a test runs the job it enqueued, not whichever job a lane offers
// first. It counts an attempt like a claim. A leased, dead or finished job,
// or one whose attempts are spent, is an error.
//
// Keys: the lookup's reads (record, schedule key); S(1,"s",...) and
// S(1,"j",id) again, serializable (a concurrent claim or cancel conflicts);
// S(1,"c",id) when the job has a checkpoint. Clears the old schedule key and
// sets the new one at the lease deadline, and the lease index S(1,"l",id).
func claimOne(ctx context.Context, q *Queue, id ID, holder string, lease time.Duration) (Lease, error) {
	if err := q.checkLease(lease); err != nil {
		return Lease{}, err
	}
	var l Lease
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if err != nil {
			return err
		}
		if info.State != StateReady && info.State != StateScheduled {
			return fmt.Errorf("%w: %s is %s: only a scheduled or ready job can be worked", ErrInvalidOption, id, info.State)
		}
		svb, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		rv, err := tr.Get(q.k.jobKey(id)).Get()
		if err != nil {
			return err
		}
		if svb == nil || rv == nil {
			return fmt.Errorf("%w: %s moved meanwhile", ErrNotFound, id)
		}
		var sv schedValue
		if err := sv.unmarshal(svb); err != nil {
			return fmt.Errorf("quick: job %s: %w", id, err)
		}
		var rec record
		if err := rec.unmarshal(rv); err != nil {
			return fmt.Errorf("quick: job %s: %w", id, err)
		}
		if sv.MaxAttempts > 0 && sv.Attempt >= sv.MaxAttempts {
			// A claim would dead-letter it rather than run it.
			return fmt.Errorf("%w: %s has spent its %d attempts", ErrInvalidOption, id, sv.MaxAttempts)
		}
		var ck []byte
		if sv.hasCheckpoint() {
			if ck, err = tr.Get(q.k.ckptKey(id)).Get(); err != nil {
				return err
			}
		}
		now := q.Now()
		sv.Attempt++
		sv.Token = newToken()
		sv.Holder = holder
		sv.LeasedAtMs = now.UnixMilli()
		deadline := now.Add(lease)
		newKey, lane, vestMs := q.k.place(info.TaskType, info.Priority, deadline, id, q.lanes)
		tr.Clear(key)
		tr.Set(newKey, sv.marshal())
		// The lease index follows the moved key, as after a claim, so
		// lookup by ID finds the job.
		tr.Set(q.k.leaseKey(id), encodeLeaseIndex(vestMs))
		l = Lease{
			ID: id, TaskType: info.TaskType, Priority: info.Priority, ItemSpace: rec.ItemSpace,
			Payload: rec.Payload, Checkpoint: ck, Attempt: int(sv.Attempt), MaxAttempts: int(sv.MaxAttempts),
			CreatedAt: time.UnixMilli(rec.CreatedAtMs), VestedAt: info.RunAt,
			Deadline: deadline.Truncate(time.Millisecond), Holder: holder, LastError: rec.LastError,
			key: newKey, lane: lane, sv: sv,
		}
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("quick: claim %s: %w", id, err)
	}
	return l, nil
}
