package quick

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
)

func init() { testhook.ClaimOne = claimOne }

// claimOne leases one job by ID, whatever its vesting time, for quicktest's
// Work: a test runs the job it enqueued, not whichever job a lane offers
// first. It counts an attempt like a claim. A leased, dead or finished job,
// or one whose attempts are spent, is an error. The job is found through its
// lookup index (lookup.go), so its task type must keep one.
//
// Keys: the lookup's reads (S (2, "i", id), then the job key and its
// payload blob); the job key again, serializable (a concurrent claim or
// cancel conflicts); Z (4, id) when the checkpoint is not inline. Clears the
// job key and sets it at the lease deadline with a new token, and the
// lookup index. The lane's pointer stays: it vests no later than the lane's
// earliest key still, which is all the pointer index needs.
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
		if info.zl == nil || key == nil {
			return fmt.Errorf("%w: %s has no job key", ErrNotFound, id)
		}
		jv, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		if jv == nil {
			return fmt.Errorf("%w: %s moved meanwhile", ErrNotFound, id)
		}
		var v zjobValue
		if err := v.unmarshal(jv); err != nil {
			return fmt.Errorf("quick: job %s: %w", id, err)
		}
		// A live lease was refused above (its state is leased); a lapsed
		// one is taken over, as a claim would, its run counted.
		if v.exhausted() {
			// A claim would dead-letter it rather than run it.
			return fmt.Errorf("%w: %s has spent its %d attempts", ErrInvalidOption, id, v.MaxAttempts)
		}
		ln := info.zl.lane
		ck := v.Checkpoint
		if v.hasCheckpoint() && v.Flags&flagCkptBlob != 0 {
			if ck, err = tr.Get(ln.z.ckptKey(id)).Get(); err != nil {
				return err
			}
		}
		now := q.Now()
		deadline := now.Add(lease)
		v.Attempt++
		v.Token = newToken()
		v.Holder = holder
		v.LeasedAtMs = now.UnixMilli()
		vestMs := deadline.UnixMilli()
		tr.Clear(key)
		tr.Set(ln.jobKey(vestMs, id), v.marshal())
		q.indexSet(tr, ln, vestMs, id, v.Flags)
		l = Lease{
			ID: id, TaskType: info.TaskType, Priority: info.Priority, ItemSpace: info.ItemSpace,
			Payload: info.Payload, Checkpoint: clone(ck), Attempt: int(v.Attempt), MaxAttempts: int(v.MaxAttempts),
			CreatedAt: info.CreatedAt, VestedAt: info.RunAt,
			Deadline: deadline.Truncate(time.Millisecond), Holder: holder, LastError: v.LastError,
			zl: &zoneLease{lane: ln, vestMs: vestMs, v: v},
		}
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("quick: claim %s: %w", id, err)
	}
	return l, nil
}
