package quick

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Helpers that place zones-layout jobs by hand, exactly as ZONES.md lays
// them out (job key Z (0, prio, lane, vestMs, id) -> zjobValue, the lane
// covered, the lookup index set for trackable jobs), so the inspection tests
// do not depend on the zones enqueue and claim being built.

var ziEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type zienv struct {
	q     *Queue
	clk   *clock.Fake
	raw   kv.Database
	space tuple.Subspace
	opts  Options
	ctx   context.Context
}

// newZIEnv opens a zones-layout queue on memkv with a fake clock; the task
// type "email" is Trackable.
func newZIEnv(t testing.TB, opts Options) *zienv {
	t.Helper()
	raw, space := fdbtest.Open(t)
	clk := clock.NewFake(ziEpoch)
	opts.Clock = clk
	// zones is the only layout
	if opts.TaskTypes == nil {
		opts.TaskTypes = map[string]TaskTypeOptions{"email": {}}
	}
	ctx := context.Background()
	q, err := Open(ctx, raw, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &zienv{q: q, clk: clk, raw: raw, space: space, opts: opts, ctx: ctx}
}

// reopen opens the same queue over db (a faulty wrapper of e.raw).
func (e *zienv) reopen(t testing.TB, db kv.Database) *Queue {
	t.Helper()
	q, err := Open(e.ctx, db, e.space, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// zijob is a zones job to place by hand.
type zijob struct {
	TaskType  string
	ItemSpace string
	Prio      Priority
	Vest      time.Time // zero: now
	V         zjobValue // Payload over InlinePayload goes to the blob
}

// place writes a job key (and blob), covers its lane and indexes it when
// V.Flags has flagTrackable, as an enqueue does.
func (e *zienv) place(t testing.TB, j zijob) ID {
	t.Helper()
	if j.TaskType == "" {
		j.TaskType = "email"
	}
	if j.Prio == 0 {
		j.Prio = Normal
	}
	if j.Vest.IsZero() {
		j.Vest = e.clk.Now()
	}
	id := NewID(e.clk.Now())
	z := e.q.zoneOf(j.TaskType, j.ItemSpace)
	err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		lanes := e.q.opts.ZoneLanes
		if mv, err := tr.Get(z.metaKey()).Get(); err != nil {
			return err
		} else if mv != nil {
			var m zoneMeta
			if m.unmarshal(mv) == nil && m.Lanes > 0 {
				lanes = int(m.Lanes)
			}
		}
		l := laneRef{z: z, prio: j.Prio, lane: laneOfID(id, lanes)}
		v := j.V
		if len(v.Payload) > InlinePayload {
			tr.Set(z.blobKey(id), v.Payload)
			v.Payload, v.Flags = nil, v.Flags|flagBlob
		}
		vestMs := j.Vest.UnixMilli()
		tr.Set(l.jobKey(vestMs, id), v.marshal())
		q := e.q
		if v.UniqueKey != "" {
			tr.Set(q.k.uniqKey(j.TaskType, v.UniqueKey), id[:])
		}
		q.indexSet(tr, l, vestMs, id, v.Flags)
		return q.cover(tr, l, vestMs, e.clk.Now().UnixMilli())
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// setLanes writes a zone's meta (its lane count), as SetZoneLanes does.
func (e *zienv) setLanes(t testing.TB, taskType, itemSpace string, n int) {
	t.Helper()
	z := e.q.zoneOf(taskType, itemSpace)
	m := zoneMeta{Lanes: int64(n)}
	if err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(z.metaKey(), m.marshal())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// lease moves a trackable job's key to now+d with a token, as a claim
// does (Attempt+1, Holder), and returns the new vesting time.
func (e *zienv) lease(t testing.TB, id ID, holder string, d time.Duration) int64 {
	t.Helper()
	now := e.clk.Now()
	newMs := now.Add(d).UnixMilli()
	err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		iv, err := tr.Get(e.q.zk.indexKey(id)).Get()
		if err != nil {
			return err
		}
		var ix indexValue
		if err := ix.unmarshal(iv); err != nil {
			return err
		}
		l := ix.lane()
		old := l.jobKey(ix.VestMs, id)
		b, err := tr.Get(old).Get()
		if err != nil {
			return err
		}
		var v zjobValue
		if err := v.unmarshal(b); err != nil {
			return err
		}
		v.Attempt++
		v.Token, v.Holder, v.LeasedAtMs = newToken(), holder, now.UnixMilli()
		tr.Clear(old)
		tr.Set(l.jobKey(newMs, id), v.marshal())
		e.q.indexSet(tr, l, newMs, id, v.Flags)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newMs
}

// zdead writes a zones dead letter as a dead-lettering does: a schema-1
// record with flagZones, its dead-letter index key and count, and a
// checkpoint under S (1, "c", id) when ckpt is set.
func (e *zienv) zdead(t testing.TB, taskType, itemSpace string, payload, ckpt []byte, flags uint64) ID {
	t.Helper()
	now := e.clk.Now()
	id := NewID(now)
	rec := record{
		TaskType: taskType, Priority: int64(Normal), ItemSpace: itemSpace, Payload: payload, MaxAttempts: 3,
		CreatedAtMs: now.UnixMilli(), LastError: "boom", State: stateDead, DeadAtMs: now.UnixMilli(), Attempts: 3,
		Flags: flags | flagZones,
	}
	q := e.q
	if err := q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(q.k.jobKey(id), rec.marshal())
		tr.Set(q.k.deadKey(taskType, rec.DeadAtMs, id), nil)
		tr.Add(q.k.deadCountKey(taskType), le64(1))
		if ckpt != nil {
			tr.Set(q.k.ckptKey(id), ckpt)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// get reads a raw key (nil when missing).
func (e *zienv) get(t testing.TB, key []byte) []byte {
	t.Helper()
	var v []byte
	if err := e.q.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(key).Get()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// laneState reads a lane's state (ok false when missing).
func (e *zienv) laneState(t testing.TB, l laneRef) (laneState, bool) {
	t.Helper()
	b := e.get(t, l.stateKey())
	if b == nil {
		return laneState{}, false
	}
	var s laneState
	if err := s.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return s, true
}

// laneOf is the lane a placed job is in (zone of one lane unless setLanes).
func (e *zienv) laneOf(taskType, itemSpace string, id ID, lanes int) laneRef {
	return laneRef{z: e.q.zoneOf(taskType, itemSpace), prio: Normal, lane: laneOfID(id, lanes)}
}
