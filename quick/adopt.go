package quick

import (
	"bytes"
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Adopting zones that a user's own tools copied (docs/design.md, "Moving,
// adopting and deleting a tenant").
//
// A tenant's zones copied byte for byte into the place this queue's
// Options.ZoneSpace gives it (a backup restored, a subspace copied from
// another cluster) carry their jobs, lane states and meta, but not the
// queue's own keys: the pointers (S (2, "p", ...)), the lookup index
// (S (2, "i", id)) and the unique keys (S (1, "u", ...)). Without a
// pointer a lane is never claimed; an enqueue into it repairs it (cover),
// but a tenant that gets no enqueue would wait forever. AdoptTenant
// rebuilds them, in bounded transactions.

// AdoptOptions configure AdoptTenant.
type AdoptOptions struct {
	// TaskType limits the adoption to one task type; empty adopts the
	// tenant's zones of every known task type (TaskTypes). A task type
	// this queue never saw has to be named.
	TaskType string
	// Batch is how many jobs one transaction indexes; default 256, at most
	// 1000.
	Batch int
	// Progress, when set, is called after each batch.
	Progress func(TenantProgress)

	// afterBatch, set by tests, runs after each batch commits: an error
	// stops the adoption there, as a crash would.
	afterBatch func() error
}

// adoptLanesBatch is how many lanes one transaction of the lanes step
// covers.
const adoptLanesBatch = 64

// AdoptTenant makes a tenant's copied zones of one task type (or of every
// known task type) whole in this queue: it writes the lookup index entry of
// each trackable job and each job's unique key (unless another job holds
// it), then gives every lane that holds a job a pointer that vests by its
// earliest job (a lane state copied without its pointer, or naming a
// lease of the queue it was copied from, is written anew). Every copied job
// is then claimable, without waiting for an enqueue. It is idempotent and
// resumable: S (1, "mv", itemSpace, type) holds its cursor while it runs.
// Adopting a zone that is in use is safe but pointless.
//
// A job copied while it was leased keeps its lease's deadline as its
// vesting time: it runs again once that passes, as a lapsed lease would.
func (q *Queue) AdoptTenant(ctx context.Context, itemSpace string, opts AdoptOptions) (TenantResult, error) {
	opts.Batch = batchOf(opts.Batch)
	return q.eachTenantType(ctx, itemSpace, opts.TaskType, "adopt", func(tt string) (int64, bool, error) {
		return q.adoptOne(ctx, itemSpace, tt, opts)
	})
}

func (q *Queue) adoptOne(ctx context.Context, itemSpace, taskType string, opts AdoptOptions) (int64, bool, error) {
	z := q.zoneOf(taskType, itemSpace)
	rec, err := q.loadOp(ctx, itemSpace, taskType)
	if err != nil {
		return 0, false, err
	}
	resumed := rec != nil
	if rec == nil {
		rec = &moveRecord{Kind: opAdopt, Step: stepIndex, StartedMs: q.Now().UnixMilli()}
		if err := q.saveOp(ctx, itemSpace, taskType, rec); err != nil {
			return 0, false, err
		}
	} else if rec.Kind != opAdopt {
		return 0, false, fmt.Errorf("%w: a %s at step %s", ErrTenantBusy, rec.Kind, rec.Step)
	}
	for rec.Step == stepIndex {
		if err := q.adoptIndexBatch(ctx, z, rec, opts.Batch); err != nil {
			return rec.Done, resumed, err
		}
		if opts.Progress != nil {
			opts.Progress(TenantProgress{TaskType: taskType, Step: stepIndex, Done: rec.Done})
		}
		if opts.afterBatch != nil {
			if err := opts.afterBatch(); err != nil {
				return rec.Done, resumed, err
			}
		}
	}
	for rec.Step == stepLanes {
		if err := q.adoptLanesBatch(ctx, z, rec); err != nil {
			return rec.Done, resumed, err
		}
		if opts.afterBatch != nil {
			if err := opts.afterBatch(); err != nil {
				return rec.Done, resumed, err
			}
		}
	}
	if opts.Progress != nil {
		opts.Progress(TenantProgress{TaskType: taskType, Step: stepLanes, Done: rec.Done})
	}
	return rec.Done, resumed, q.clearOp(ctx, itemSpace, taskType)
}

// adoptIndexBatch indexes the next jobs of z from the record's cursor and
// moves the cursor on, in the record, in the same transaction; at the
// zone's end the record goes to the lanes step.
//
// Keys: a range read of at most limit job keys of Z (0) (serializable);
// per trackable job a set of S (2, "i", id); per job with a unique key a
// read of S (1, "u", type, key) and a set of it when no job holds it; a
// set of S (1, "mv", itemSpace, type).
func (q *Queue) adoptIndexBatch(ctx context.Context, z zone, rec *moveRecord, limit int) error {
	recKey := q.k.moveKey(z.itemSpace, z.taskType)
	var next moveRecord
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		next = *rec
		r := z.jobs()
		if rec.Cursor != nil {
			r.Begin = append(bytes.Clone(z.space.Bytes()), rec.Cursor...)
		}
		kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: limit}).GetSliceWithError()
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
			jk, kerr := z.parseJobKey(kvp.Key)
			var v zjobValue
			if kerr != nil || v.unmarshal(kvp.Value) != nil {
				continue // a claim quarantines it
			}
			q.indexSet(tr, laneRef{z: z, prio: jk.Priority, lane: jk.Lane}, jk.VestMs, jk.ID, v.Flags)
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
			if held == nil {
				tr.Set(u.key, u.id[:])
			}
		}
		next.Done += int64(len(kvs))
		if len(kvs) < limit {
			next.Step, next.Cursor = stepLanes, nil
		} else {
			last := kvs[len(kvs)-1].Key
			next.Cursor = append(bytes.Clone(last[len(z.space.Bytes()):]), 0)
		}
		tr.Set(recKey, next.marshal())
		return nil
	})
	if err == nil {
		*rec = next
	}
	return err
}

// adoptLanesBatch gives the next lanes of z that hold jobs a pointer by
// their earliest job (adoptLanes), from the record's cursor, and moves the
// cursor on in the record in the same transaction; at the zone's end the
// record's step is "done".
//
// Keys: those of adoptLanes; a set of S (1, "mv", itemSpace, type).
func (q *Queue) adoptLanesBatch(ctx context.Context, z zone, rec *moveRecord) error {
	recKey := q.k.moveKey(z.itemSpace, z.taskType)
	var next moveRecord
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		next = *rec
		cursor, done, err := q.adoptLanes(tr, z, rec.Cursor)
		if err != nil {
			return err
		}
		next.Cursor = cursor
		if done {
			next.Step, next.Cursor = "done", nil
		}
		tr.Set(recKey, next.marshal())
		return nil
	})
	if err == nil {
		*rec = next
	}
	return err
}

// adoptAllLanes runs adoptLanes over the whole zone, one transaction per
// adoptLanesBatch lanes, keeping its cursor in memory (a move's adoption
// step, which a resume runs again whole).
func (q *Queue) adoptAllLanes(ctx context.Context, z zone) error {
	var cursor []byte
	for {
		var next []byte
		var done bool
		err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
			var err error
			next, done, err = q.adoptLanes(tr, z, cursor)
			return err
		})
		if err != nil || done {
			return err
		}
		cursor = next
	}
}

// adoptLanes gives up to adoptLanesBatch lanes of z that hold jobs, from
// cursor (a key suffix under the zone; nil: its start), a lane state and a
// pointer by their earliest job, finding each by skipping from the cursor
// to the next lane's first key. It returns the cursor after them, and done
// at the zone's end.
//
// Keys: per lane a range read of Z (0) limited to one key (serializable),
// its state Z (1, prio, lane) (serializable) and the pointer it names
// (serializable); the state and pointer written where missing or later
// than the lane's first job.
func (q *Queue) adoptLanes(tr kv.Transaction, z zone, cursor []byte) ([]byte, bool, error) {
	nowMs := q.Now().UnixMilli()
	r := z.jobs()
	if cursor != nil {
		r.Begin = append(bytes.Clone(z.space.Bytes()), cursor...)
	}
	for range adoptLanesBatch {
		kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: 1}).GetSliceWithError()
		if err != nil {
			return nil, false, err
		}
		if len(kvs) == 0 {
			return nil, true, nil
		}
		jk, kerr := z.parseJobKey(kvs[0].Key)
		if kerr != nil {
			// Not a job key: skip it (no lane holds it, so no claim
			// reaches it; ZoneJobs shows it).
			r.Begin = append(bytes.Clone(kvs[0].Key), 0)
			continue
		}
		l := laneRef{z: z, prio: jk.Priority, lane: jk.Lane}
		if err := q.adoptLane(tr, l, jk.VestMs, nowMs); err != nil {
			return nil, false, err
		}
		r.Begin = l.laneRange().End
	}
	return bytes.Clone(r.Begin[len(z.space.Bytes()):]), false, nil
}

// adoptLane makes sure lane l, whose earliest job vests at vestMs, has a
// lane state and a pointer of this queue that vests by then.
func (q *Queue) adoptLane(tr kv.Transaction, l laneRef, vestMs, nowMs int64) error {
	v, err := tr.Get(l.stateKey()).Get()
	if err != nil {
		return err
	}
	var s laneState
	if v == nil || s.unmarshal(v) != nil {
		q.movePointer(tr, l, -1, laneState{PtrMs: vestMs})
		return nil
	}
	ptr, err := tr.Get(q.pointerKeyOf(l, s.PtrMs)).Get()
	if err != nil {
		return err
	}
	switch {
	case ptr == nil:
		// Copied without its pointer, or naming a lease of the queue it
		// was copied from: written anew, unleased.
		q.movePointer(tr, l, -1, laneState{PtrMs: vestMs})
	case !s.leased() && !s.Parked && !s.Vested && s.PtrMs > vestMs && s.PtrMs > nowMs:
		q.movePointer(tr, l, s.PtrMs, laneState{PtrMs: vestMs})
	}
	return nil
}
