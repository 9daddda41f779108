package quick

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
)

// What package quicktest reads and claims (through internal/testhook, so
// that neither is a public API): a task type's live jobs with their
// payloads inside a caller's transaction, and one job leased by ID.

func init() {
	testhook.JobsTx = testJobsTx
	testhook.ClaimOne = claimByID
}

// testJobsTx lists up to limit of a task type's scheduled, ready and
// leased jobs, with their payloads, in rt: quicktest's view of what a test
// enqueued, including its own uncommitted writes when rt is the caller's
// transaction. more is set when the task type holds more. On a queue of
// the lanes layout it is jobsTx (schema 1).
//
// Keys: List's reads over every tenant (the pointer index, each live
// lane's job keys; at most limit+1 jobs), then a point read of Z (3, id)
// for each payload over InlinePayload. Snapshot reads: asserting adds no
// conflicts to the caller's transaction.
func testJobsTx(rt kv.ReadTransaction, q *Queue, taskType string, limit int) ([]JobInfo, bool, error) {
	if q.opts.Layout != LayoutZones {
		return jobsTx(rt, q, taskType, limit)
	}
	if err := validTaskType(taskType); err != nil {
		return nil, false, err
	}
	snap := rt.Snapshot()
	s := &listScan{snap: snap, limit: limit + 1, budget: maxListBudget, nowMs: q.Now().UnixMilli()}
	next, err := q.listIndex(s, taskType, nil)
	if err != nil {
		return nil, false, err
	}
	jobs, more := s.jobs, next != ""
	if len(jobs) > limit {
		jobs, more = jobs[:limit], true
	}
	blobs := make([]kv.Future[[]byte], len(jobs))
	for i, j := range jobs {
		if j.zl.v.Flags&flagBlob != 0 {
			blobs[i] = snap.Get(j.zl.lane.z.blobKey(j.ID))
		} else {
			jobs[i].Payload = j.zl.v.Payload
		}
	}
	for i, f := range blobs {
		if f == nil {
			continue
		}
		if jobs[i].Payload, err = f.Get(); err != nil {
			return nil, false, err
		}
	}
	return jobs, more, nil
}

// claimByID leases one job by ID, whatever its vesting time, for
// quicktest's Work: a test runs the job it enqueued, not whichever job a
// lane offers first. It counts an attempt like a claim. A leased, dead or
// finished job, or one whose attempts are spent, is an error. A schema-1
// job goes through claimOne.
//
// Keys (zones job): the lookup's reads (S (2, "i", id), the job key and
// blob), the job key again (serializable: a claim or cancel meanwhile
// conflicts), Z (4, id) for a checkpoint over InlinePayload; clears the job
// key, sets it at the lease deadline with the lease, sets S (2, "i", id),
// and reads the lane state (cover: the lane's pointer already vests no
// later than the job did).
func claimByID(ctx context.Context, q *Queue, id ID, holder string, lease time.Duration) (Lease, error) {
	if err := q.checkLease(lease); err != nil {
		return Lease{}, err
	}
	var (
		l      Lease
		schema bool
	)
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if err != nil {
			return err
		}
		if info.zl == nil {
			schema = true
			return nil
		}
		if info.State != StateReady && info.State != StateScheduled {
			return fmt.Errorf("%w: %s is %s: only a scheduled or ready job can be worked", ErrInvalidOption, id, info.State)
		}
		l, err = q.claimZoneByIDTx(tr, info, key, holder, lease)
		return err
	})
	if schema {
		return claimOne(ctx, q, id, holder, lease)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("quick: claim %s: %w", id, err)
	}
	return l, nil
}

// claimZoneByIDTx leases the zones job lookup found (info, at key), as a
// claim's takeZoneJob does.
func (q *Queue) claimZoneByIDTx(tr kv.Transaction, info JobInfo, key []byte, holder string, lease time.Duration) (Lease, error) {
	id, ln := info.ID, info.zl.lane
	jv, err := tr.Get(key).Get()
	if err != nil {
		return Lease{}, err
	}
	if jv == nil {
		return Lease{}, fmt.Errorf("%w: %s moved meanwhile", ErrNotFound, id)
	}
	var v zjobValue
	if err := v.unmarshal(jv); err != nil {
		return Lease{}, fmt.Errorf("quick: job %s: %w", id, err)
	}
	if v.exhausted() {
		// A claim would dead-letter it rather than run it.
		return Lease{}, fmt.Errorf("%w: %s has spent its %d attempts", ErrInvalidOption, id, v.MaxAttempts)
	}
	ckpt := v.Checkpoint
	if v.Flags&flagCkptBlob != 0 {
		if ckpt, err = tr.Get(ln.z.ckptKey(id)).Get(); err != nil {
			return Lease{}, err
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
	if err := q.cover(tr, ln, vestMs, now.UnixMilli()); err != nil {
		return Lease{}, err
	}
	return Lease{
		ID: id, TaskType: info.TaskType, Priority: info.Priority, ItemSpace: info.ItemSpace,
		Payload: info.Payload, Checkpoint: clone(ckpt), Attempt: int(v.Attempt), MaxAttempts: int(v.MaxAttempts),
		CreatedAt: info.CreatedAt, VestedAt: info.RunAt,
		Deadline: deadline.Truncate(time.Millisecond), Holder: holder, LastError: v.LastError,
		lane: ln.lane, zl: &zoneLease{lane: ln, vestMs: vestMs, v: v},
	}, nil
}
