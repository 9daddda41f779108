package quick

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// DeadPage is a page of dead letters, oldest first.
type DeadPage struct {
	Jobs []JobInfo
	// Next resumes the listing; empty at the end.
	Next Cursor
}

// ListDeadOptions select dead letters to list.
type ListDeadOptions struct {
	TaskType string
	// Limit is the most jobs returned; default 100.
	Limit int
	// After resumes a listing: pass the previous page's Next.
	After Cursor
}

// ListDead lists a task type's dead letters, oldest first, with payloads.
//
// Keys: a range read of S(1,"d",type) and a point read of each job's record.
func (q *Queue) ListDead(ctx context.Context, opts ListDeadOptions) (DeadPage, error) {
	taskType, limit := opts.TaskType, opts.Limit
	if err := validTaskType(taskType); err != nil {
		return DeadPage{}, err
	}
	if limit <= 0 {
		limit = 100
	}
	prefix := q.k.dead.Sub(taskType).Bytes()
	after, err := opts.After.key(cursorDead, taskType, prefix)
	if err != nil {
		return DeadPage{}, err
	}
	var page DeadPage
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		page = DeadPage{}
		snap := tr.Snapshot()
		r := rangeOf(q.k.dead.Sub(taskType))
		if after != nil {
			if string(after) >= string(r.End) {
				return nil // a forged cursor past the end: nothing follows it
			}
			r.Begin = kv.KeyAfter(after)
		}
		kvs, err := snap.GetRange(r, kv.RangeOptions{Limit: limit + 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > limit {
			kvs = kvs[:limit]
			page.Next = makeCursor(cursorDead, taskType, prefix, kvs[limit-1].Key)
		}
		ids := make([]ID, 0, len(kvs))
		for _, p := range kvs {
			id, _, err := q.parseDeadKey(p.Key)
			if err != nil {
				continue
			}
			ids = append(ids, id)
		}
		fs := make([]kv.Future[[]byte], len(ids))
		for i, id := range ids {
			fs[i] = snap.Get(q.k.jobKey(id))
		}
		for i, f := range fs {
			v, err := f.Get()
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			var rec record
			if rec.unmarshal(v) != nil {
				continue
			}
			page.Jobs = append(page.Jobs, JobInfo{
				ID: ids[i], TaskType: rec.TaskType, Priority: Priority(rec.Priority), ItemSpace: rec.ItemSpace,
				State: StateDead, Attempt: int(rec.Attempts), MaxAttempts: int(rec.MaxAttempts),
				CreatedAt: time.UnixMilli(rec.CreatedAtMs), DeadAt: time.UnixMilli(rec.DeadAtMs),
				LastError: rec.LastError, UniqueKey: rec.UniqueKey, Payload: rec.Payload,
			})
		}
		return nil
	})
	if err != nil {
		return DeadPage{}, fmt.Errorf("quick: list dead %s: %w", taskType, err)
	}
	return page, nil
}

func (q *Queue) parseDeadKey(key []byte) (ID, int64, error) {
	t, err := q.k.dead.Unpack(key)
	if err != nil || len(t) != 3 {
		return ID{}, 0, fmt.Errorf("%w: dead-letter key", ErrCorrupt)
	}
	ms, ok1 := t[1].(int64)
	id, ok2 := t[2].(tuple.UUID)
	if !ok1 || !ok2 {
		return ID{}, 0, fmt.Errorf("%w: dead-letter key %v", ErrCorrupt, t)
	}
	return ID(id), ms, nil
}

// DeadCount returns the number of dead letters of a task type, from an
// atomic counter (one read).
func (q *Queue) DeadCount(ctx context.Context, taskType string) (int64, error) {
	var n int64
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Snapshot().Get(q.k.deadCountKey(taskType)).Get()
		if err != nil {
			return err
		}
		n = decodeCounter(v)
		return nil
	})
	return n, err
}

func decodeCounter(v []byte) int64 {
	var b [8]byte
	copy(b[:], v)
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// Requeue takes a job out of the dead letters and runs it now with its
// attempts reset, keeping its payload and checkpoint. The time it runs at is
// fixed before the retry loop and kept in the record, so a retry after an
// unknown commit result recognises its own requeue instead of reporting the
// job not dead.
//
// Keys: reads S(1,"j",id) and S(1,"c",id) (snapshot); clears
// S(1,"d",type,ms,id); sets S(1,"s",...) and S(1,"j",id); adds to
// S(1,"dn",type). Bound: 5 keys, one record (at most 100 kB).
func (q *Queue) Requeue(ctx context.Context, id ID) error {
	now := q.Now()
	applied := false
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		if err := q.requeueTx(tr, id, now, maybeCommitted && applied); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("quick: requeue %s: %w", id, err)
	}
	return nil
}

// requeueTx runs a dead job again at now. mine says that an earlier attempt
// of the same call, with the same now, ran to its commit and may have
// applied: a job found requeued at exactly now is then that attempt's own
// requeue, not a job that is "not dead".
func (q *Queue) requeueTx(tr kv.Transaction, id ID, now time.Time, mine bool) error {
	v, err := tr.Get(q.k.jobKey(id)).Get()
	if err != nil {
		return err
	}
	if v == nil {
		if mine {
			// A zones dead letter's record goes when it is requeued.
			if ok, err := q.zoneRequeuedAt(tr, id, now.UnixMilli()); err != nil || ok {
				return err
			}
		}
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	var rec record
	if err := rec.unmarshal(v); err != nil {
		return err
	}
	if mine && rec.RequeuedAtMs == now.UnixMilli() && rec.State != stateDead {
		return nil // the earlier attempt's requeue committed
	}
	if rec.State != stateDead {
		return fmt.Errorf("%w: %s is not dead", ErrInvalidOption, id)
	}
	if rec.Quarantined {
		return fmt.Errorf("%w: %s was quarantined (its record did not decode) and holds no payload to run: %s", ErrCorrupt, id, rec.LastError)
	}
	// TODO(issue 21, onelayout): a schema-1 dead letter (no flagZones)
	// goes to its zone too: there is no other layout to place it in.
	return q.requeueZoneTx(tr, id, &rec, now)
}

// purgeBatch bounds one purge transaction.
const purgeBatch = 500

// PurgeDead deletes a task type's dead letters beyond the retention (older
// than MaxAge, or the oldest beyond MaxCount), at most limit of them (default
// 10,000), and returns how many it deleted. Any worker may run it; it reads
// only the oldest end of the dead-letter index.
func (q *Queue) PurgeDead(ctx context.Context, taskType string, ret Retention, limit int) (int, error) {
	if err := validTaskType(taskType); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = 10_000
	}
	total := 0
	for total < limit {
		n := 0
		// A retry after an unknown result purges the next batch: each
		// attempt clears what it read and counts it in the same commit.
		err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
			n = 0
			now := q.Now()
			cv, err := tr.Snapshot().Get(q.k.deadCountKey(taskType)).Get()
			if err != nil {
				return err
			}
			count := decodeCounter(cv)
			excess := int64(0)
			if ret.MaxCount > 0 && count > int64(ret.MaxCount) {
				excess = count - int64(ret.MaxCount)
			}
			kvs, err := tr.GetRange(rangeOf(q.k.dead.Sub(taskType)), kv.RangeOptions{Limit: min(purgeBatch, limit-total)}).GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range kvs {
				id, ms, err := q.parseDeadKey(p.Key)
				if err != nil {
					tr.Clear(p.Key)
					continue
				}
				old := ret.MaxAge > 0 && now.Sub(time.UnixMilli(ms)) > ret.MaxAge
				if !old && int64(n) >= excess {
					break
				}
				tr.Clear(p.Key)
				tr.Clear(q.k.jobKey(id))
				tr.Clear(q.k.ckptKey(id))
				n++
			}
			if n > 0 {
				tr.Add(q.k.deadCountKey(taskType), le64(-int64(n)))
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("quick: purge dead %s: %w", taskType, err)
		}
		total += n
		if n == 0 {
			break
		}
	}
	return total, nil
}

// PurgeMarkers deletes the enqueue markers older than the idempotency
// window, of both layouts (S(1,"m",id) and the zones layout's S(2,"m",id)).
// Markers sort by the time in their version 7 ID, so this is one range
// clear per layout with no read; any worker runs it now and then.
func (q *Queue) PurgeMarkers(ctx context.Context) error {
	floor := idFloor(q.Now().Add(-q.opts.IdempotencyWindow))
	cut, zcut := q.k.markKey(floor), q.zk.markKey(floor)
	return q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		tr.ClearRange(kv.KeyRange{Begin: rangeOf(q.k.mark).Begin, End: cut})
		tr.ClearRange(kv.KeyRange{Begin: rangeOf(q.zk.mark).Begin, End: zcut})
		return nil
	})
}
