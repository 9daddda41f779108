package quick

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Deleting a tenant: its zones with their jobs, pointers, lookup index
// entries, unique keys and limits (docs/design.md, "Moving, adopting and
// deleting a tenant").

// DeleteOptions configure DeleteTenant.
type DeleteOptions struct {
	// TaskType limits the deletion to one task type; empty deletes the
	// tenant's zones of every known task type (TaskTypes).
	TaskType string
	// Batch is how many jobs one transaction deletes; default 256, at most
	// 1000.
	Batch int
	// Fence is how long the fence's lane leases last; default 10 minutes.
	// A deletion that crashes and is not resumed leaves the tenant's
	// remaining jobs claimable again after it.
	Fence time.Duration
	// Progress, when set, is called after each batch.
	Progress func(TenantProgress)

	// afterBatch, set by tests, runs after each batch commits: an error
	// stops the deletion there, as a crash would.
	afterBatch func() error
}

// TenantProgress reports a tenant operation's progress.
type TenantProgress struct {
	TaskType string
	Step     string
	// Done counts the jobs moved, indexed or deleted so far for TaskType.
	Done int64
}

// TenantResult is what a tenant operation did.
type TenantResult struct {
	// TaskTypes are the task types it covered.
	TaskTypes []string
	// Jobs counts the jobs moved, indexed or deleted (across resumes).
	Jobs int64
	// Resumed is set when it carried on an operation a crash left.
	Resumed bool
}

// DeleteTenant deletes a tenant's zones of one task type (or of every
// known task type) with everything they hold: job keys and blobs, lane
// states and their pointers, the jobs' lookup index entries and unique
// keys, the tenant's limits (its override and running state) and hand-out
// marks. Dead letters and outcomes of the tenant's finished jobs, which
// live in the queue's shared state, stay.
//
// It fences the zone first (its lanes leased by the deletion: no claim
// takes its jobs, the short-job acks of their holders fail), then deletes
// Batch jobs per transaction, then the lanes and the rest of the zone. Jobs
// leased at the time keep running, but their acks, extensions and
// checkpoints fail with ErrLeaseLost (the key is gone): nothing is left
// dangling. A job enqueued into the tenant while the deletion runs is
// deleted with the rest; one enqueued after it is a new zone.
//
// It is resumable: a crash leaves S (1, "mv", itemSpace, type), and calling
// DeleteTenant again carries on. No transaction does work proportional to
// the backlog.
func (q *Queue) DeleteTenant(ctx context.Context, itemSpace string, opts DeleteOptions) (TenantResult, error) {
	opts.Batch = batchOf(opts.Batch)
	if opts.Fence <= 0 {
		opts.Fence = defaultFence
	}
	return q.eachTenantType(ctx, itemSpace, opts.TaskType, "delete", func(tt string) (int64, bool, error) {
		return q.deleteOne(ctx, itemSpace, tt, opts)
	})
}

// defaultFence is how long a tenant operation's fence lasts by default.
const defaultFence = 10 * time.Minute

func batchOf(n int) int {
	if n <= 0 {
		return 256
	}
	return min(n, zclaimMaxJobs)
}

func (q *Queue) deleteOne(ctx context.Context, itemSpace, taskType string, opts DeleteOptions) (int64, bool, error) {
	z := q.zoneOf(taskType, itemSpace)
	rec, err := q.loadOp(ctx, itemSpace, taskType)
	if err != nil {
		return 0, false, err
	}
	resumed := rec != nil
	if rec == nil {
		rec = &moveRecord{Kind: opDelete, Step: stepFence, Token: newToken(), StartedMs: q.Now().UnixMilli()}
	} else if rec.Kind != opDelete {
		return 0, false, fmt.Errorf("%w: a %s at step %s", ErrTenantBusy, rec.Kind, rec.Step)
	}
	rec.FenceUntilMs = q.fenceDeadline(opts.Fence)
	if err := q.saveOp(ctx, itemSpace, taskType, rec); err != nil {
		return 0, resumed, err
	}
	if err := q.fenceZone(ctx, z, rec.Token, rec.FenceUntilMs, 0, ""); err != nil {
		return rec.Done, resumed, err
	}
	for {
		n, done, err := q.deleteBatch(ctx, z, opts.Batch)
		if err != nil {
			return rec.Done, resumed, err
		}
		if done >= 0 {
			rec.Done = done
		}
		if n == 0 {
			empty, err := q.clearZone(ctx, z, true)
			if err != nil {
				return rec.Done, resumed, err
			}
			if empty {
				break
			}
			continue
		}
		if opts.Progress != nil {
			opts.Progress(TenantProgress{TaskType: taskType, Step: stepDelete, Done: rec.Done})
		}
		if opts.afterBatch != nil {
			if err := opts.afterBatch(); err != nil {
				return rec.Done, resumed, err
			}
		}
		if q.Now().UnixMilli() > rec.FenceUntilMs-opts.Fence.Milliseconds()/2 {
			// Half the fence spent: renew it before it lapses.
			rec.FenceUntilMs = q.fenceDeadline(opts.Fence)
			if err := q.saveOp(ctx, itemSpace, taskType, rec); err != nil {
				return rec.Done, resumed, err
			}
			if err := q.fenceZone(ctx, z, rec.Token, rec.FenceUntilMs, 0, ""); err != nil {
				return rec.Done, resumed, err
			}
		}
	}
	return rec.Done, resumed, q.clearOp(ctx, itemSpace, taskType)
}

// deleteBatch deletes the first jobs of z and counts them in the
// operation's record, in the same transaction; it returns how many it
// deleted and the record's count (-1: no record).
//
// Keys: a range read of Z (0) of at most limit keys (serializable); per
// job a clear of its key, its blobs and S (2, "i", id), and for a job with
// a unique key a read of S (1, "u", type, key) and a clear of it when it
// names the job; a read and a set of S (1, "mv", itemSpace, type).
func (q *Queue) deleteBatch(ctx context.Context, z zone, limit int) (int, int64, error) {
	var n int
	done := int64(-1)
	recKey := q.k.moveKey(z.itemSpace, z.taskType)
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		n, done = 0, -1
		recF := tr.Get(recKey)
		kvs, err := tr.GetRange(z.jobs(), kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		type uk struct {
			key []byte
			id  ID
			f   kv.Future[[]byte]
		}
		var uks []uk
		for _, kvp := range kvs {
			tr.Clear(kvp.Key)
			n++
			jk, kerr := z.parseJobKey(kvp.Key)
			var v zjobValue
			if kerr != nil || v.unmarshal(kvp.Value) != nil {
				continue
			}
			if v.Flags&flagBlob != 0 {
				tr.Clear(z.blobKey(jk.ID))
			}
			if v.Flags&flagCkptBlob != 0 {
				tr.Clear(z.ckptKey(jk.ID))
			}
			q.indexClear(tr, jk.ID, v.Flags)
			if v.UniqueKey != "" {
				k := q.k.uniqKey(z.taskType, v.UniqueKey)
				uks = append(uks, uk{key: k, id: jk.ID, f: tr.Get(k)})
			}
		}
		for _, u := range uks {
			held, err := u.f.Get()
			if err != nil {
				return err
			}
			if bytes.Equal(held, u.id[:]) {
				tr.Clear(u.key)
			}
		}
		rv, err := recF.Get()
		if err != nil {
			return err
		}
		var rec moveRecord
		if rv != nil && rec.unmarshal(rv) == nil {
			rec.Done += int64(n)
			done = rec.Done
			if n > 0 {
				tr.Set(recKey, rec.marshal())
			}
		}
		return nil
	})
	return n, done, err
}

// clearZone removes z's lane states with their pointers, then (when the
// zone holds no job key) everything left under it: meta, hand-out marks,
// stray blobs; with tenantState, also the tenant's limits override and
// running state of the task type. It reports false, having removed only
// the lanes it found empty, when a job key is there (one enqueued
// meanwhile): the caller carries on with it.
//
// Keys: per page, fenceBatch lane states (serializable), each lane's first
// key (serializable), a clear of each empty lane's state and pointer; then
// a range read of Z (0) limited to one key (serializable) and a range clear
// of Z, of S (1, "ts", type, itemSpace) and a clear of S (1, "tl", type,
// itemSpace).
func (q *Queue) clearZone(ctx context.Context, z zone, tenantState bool) (bool, error) {
	empty := true
	err := q.eachLaneStates(ctx, z, func(tr kv.Transaction, states []kv.KeyValue) (bool, error) {
		empty = true
		type st struct {
			kvp   kv.KeyValue
			l     laneRef
			first kv.RangeResult
		}
		var sts []st
		for _, kvp := range states {
			p, lane, ok := z.parseStateKey(kvp.Key)
			if !ok {
				tr.Clear(kvp.Key)
				continue
			}
			l := laneRef{z: z, prio: p, lane: lane}
			sts = append(sts, st{kvp: kvp, l: l, first: tr.GetRange(l.laneRange(), kv.RangeOptions{Limit: 1})})
		}
		for _, s := range sts {
			kvs, err := s.first.GetSliceWithError()
			if err != nil {
				return false, err
			}
			if len(kvs) > 0 {
				empty = false
				continue
			}
			var ls laneState
			if ls.unmarshal(s.kvp.Value) == nil {
				tr.Clear(q.pointerKeyOf(s.l, ls.PtrMs))
			}
			tr.Clear(s.kvp.Key)
		}
		return empty, nil
	})
	if err != nil || !empty {
		return false, err
	}
	err = q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		kvs, err := tr.GetRange(z.jobs(), kv.RangeOptions{Limit: 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		empty = len(kvs) == 0
		if !empty {
			return nil
		}
		tr.ClearRange(rangeOf(z.space))
		if tenantState {
			tr.ClearRange(rangeOf(q.k.limitState(z.taskType, z.itemSpace)))
			tr.Clear(q.k.tenantLimitKey(z.taskType, z.itemSpace))
		}
		return nil
	})
	if tenantState {
		// As after ClearTenantLimits: this handle's view drops the
		// override at once.
		q.limits.Delete(z.taskType)
	}
	return empty, err
}
