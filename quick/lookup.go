package quick

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// The lookup index of jobs.
//
// A job has no record keyed by its ID: its key Z (0, prio, lane,
// vestMs, id) sits in its tenant's zone and moves with every claim. Every
// job also has S (2, "i", id) -> indexValue, saying where that key is now,
// kept by every write that places, moves or removes it; so Get, Cancel,
// RunNow, Wait and Outcome find it with two point reads. A task type may opt
// out (TaskTypeOptions.Untracked): its jobs are then found by ID only through
// their lease, their outcome (Waitable) or the dead letters (a zones dead
// letter is a record S (1, "j", id) with flagZones).

// ErrNotTrackable is returned (wrapped) by Get, Cancel, RunNow, Wait and
// Outcome for an ID the queue holds neither as a dead letter nor in the
// lookup index. It wraps ErrNotFound, so IsNotFound holds: the job may
// be a pending job of an Untracked task type, which no lookup by ID can find.
var ErrNotTrackable = fmt.Errorf("%w (a job of an Untracked task type is found by ID only once dead-lettered or, if waitable, finished)", ErrNotFound)

// tracked says whether new jobs of a task type get a lookup index entry:
// all but those of an Untracked type.
func (q *Queue) tracked(taskType string) bool { return !q.opts.TaskTypes[taskType].Untracked }

// indexValue is the value of S (2, "i", id): the zone and the job key's
// place in it.
type indexValue struct {
	Zone      []byte // the zone's key prefix
	ItemSpace string
	TaskType  string
	Priority  Priority
	Lane      int
	VestMs    int64
	// Flags are the job's flags (flagWaitable ...), so that Wait and
	// Outcome tell a waitable pending job with one read.
	Flags uint64
}

func (v *indexValue) marshal() []byte {
	b := make([]byte, 0, 16+len(v.Zone)+len(v.ItemSpace)+len(v.TaskType))
	b = wire.AppendBytes(b, 1, v.Zone)
	b = wire.AppendString(b, 2, v.ItemSpace)
	b = wire.AppendString(b, 3, v.TaskType)
	b = wire.AppendVarint(b, 4, uint64(v.Priority))
	b = wire.AppendVarint(b, 5, uint64(v.Lane))
	b = wire.AppendVarint(b, 6, uint64(v.VestMs))
	if v.Flags != 0 {
		b = wire.AppendVarint(b, 7, v.Flags)
	}
	return b
}

// unmarshal decodes an index value and checks it names a place a job key
// can be: anything else is ErrCorrupt.
func (v *indexValue) unmarshal(b []byte) error {
	*v = indexValue{}
	var lane uint64
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			v.Zone = append([]byte(nil), raw...)
		case 2:
			v.ItemSpace = string(raw)
		case 3:
			v.TaskType = string(raw)
		case 4:
			v.Priority = Priority(int64(x))
		case 5:
			lane = x
		case 6:
			v.VestMs = int64(x)
		case 7:
			v.Flags = x
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case len(v.Zone) == 0:
		return fmt.Errorf("%w: lookup index entry names no zone", ErrCorrupt)
	case validTaskType(v.TaskType) != nil:
		return fmt.Errorf("%w: lookup index entry has task type %q", ErrCorrupt, v.TaskType)
	case lane > maxZoneLanes:
		return fmt.Errorf("%w: lookup index entry has lane %d", ErrCorrupt, lane)
	case v.VestMs < 0:
		return fmt.Errorf("%w: lookup index entry vests at %d", ErrCorrupt, v.VestMs)
	}
	if p, perr := v.Priority.normalize(); perr != nil || p != v.Priority {
		return fmt.Errorf("%w: lookup index entry has priority %d", ErrCorrupt, int64(v.Priority))
	}
	v.Lane = int(lane)
	return nil
}

// lane is the lane the entry names.
func (v *indexValue) lane() laneRef {
	zs := tuple.NewSubspace(v.Zone)
	return laneRef{
		z:    zone{space: zs, taskType: v.TaskType, itemSpace: v.ItemSpace, hash: zoneHash(v.Zone)},
		prio: v.Priority,
		lane: v.Lane,
	}
}

// indexSet records where a tracked job's key is (flags has flagTrackable);
// every write that places or moves a job key calls it. It
// writes nothing for other jobs.
//
// Keys: sets S (2, "i", id).
func (q *Queue) indexSet(tr kv.Transaction, l laneRef, vestMs int64, id ID, flags uint64) {
	if flags&flagTrackable == 0 {
		return
	}
	v := indexValue{Zone: l.z.space.Bytes(), ItemSpace: l.z.itemSpace, TaskType: l.z.taskType, Priority: l.prio, Lane: l.lane, VestMs: vestMs, Flags: flags & flagWaitable}
	tr.Set(q.zk.indexKey(id), v.marshal())
}

// indexClear removes a tracked job's lookup index entry when its key is
// removed for good (completed, cancelled, dead-lettered).
//
// Keys: clears S (2, "i", id).
func (q *Queue) indexClear(tr kv.Transaction, id ID, flags uint64) {
	if flags&flagTrackable == 0 {
		return
	}
	tr.Clear(q.zk.indexKey(id))
}

// zoneRef is what a lookup of a job found, carried in JobInfo
// to Cancel and RunNow: the job key's place and value, or (dead) the zone a
// zones dead letter came from.
type zoneRef struct {
	lane   laneRef
	vestMs int64
	v      zjobValue
	dead   bool
}

func (r *zoneRef) key(id ID) []byte { return r.lane.jobKey(r.vestMs, id) }

// zinfo describes a zones job from its key and value. payload is the job's
// payload (inline or from its blob).
func zinfo(l laneRef, k zjobKey, v *zjobValue, payload []byte, nowMs int64) JobInfo {
	created := k.ID.Time()
	if v.CreatedAtMs != 0 {
		created = time.UnixMilli(v.CreatedAtMs)
	}
	return JobInfo{
		ID: k.ID, TaskType: l.z.taskType, Priority: k.Priority, ItemSpace: l.z.itemSpace,
		State: stateOf(v, k.VestMs, nowMs), Lane: k.Lane, RunAt: time.UnixMilli(k.VestMs),
		Attempt: int(v.Attempt), MaxAttempts: int(v.MaxAttempts), Holder: v.Holder, CreatedAt: created,
		LastError: v.LastError, UniqueKey: v.UniqueKey, Payload: payload,
		HasCheckpoint: v.hasCheckpoint(), Waitable: v.Flags&flagWaitable != 0, Errors: v.History,
	}
}

// lookupZone finds a zones job through its lookup index entry (iv, read
// by lookup with the dead letter's record and the marker). It costs one more round trip: the job
// key and its payload blob, read at once.
func (q *Queue) lookupZone(rt kv.ReadTransaction, id ID, iv []byte) (JobInfo, []byte, error) {
	if iv == nil {
		return JobInfo{}, nil, fmt.Errorf("%w: %s", ErrNotTrackable, id)
	}
	var ix indexValue
	if err := ix.unmarshal(iv); err != nil {
		return JobInfo{}, nil, fmt.Errorf("quick: job %s: %w", id, err)
	}
	l := ix.lane()
	key := l.jobKey(ix.VestMs, id)
	jf := rt.Get(key)
	bf := rt.Get(l.z.blobKey(id))
	jv, err := jf.Get()
	if err != nil {
		return JobInfo{}, nil, err
	}
	if jv == nil {
		return JobInfo{}, nil, fmt.Errorf("%w: %s has a lookup index entry but no job key where it points (%s at %d)", ErrCorrupt, id, l, ix.VestMs)
	}
	var v zjobValue
	if err := v.unmarshal(jv); err != nil {
		return JobInfo{}, nil, fmt.Errorf("quick: job %s: %w", id, err)
	}
	payload := v.Payload
	if v.Flags&flagBlob != 0 {
		if payload, err = bf.Get(); err != nil {
			return JobInfo{}, nil, err
		}
	}
	info := zinfo(l, zjobKey{Priority: l.prio, Lane: l.lane, VestMs: ix.VestMs, ID: id}, &v, payload, q.Now().UnixMilli())
	info.zl = &zoneRef{lane: l, vestMs: ix.VestMs, v: v}
	return info, key, nil
}

// deadZoneRef marks a zones dead letter's JobInfo so that Cancel also
// clears the payload and checkpoint it may have left in its zone.
func (q *Queue) deadZoneRef(rec *record) *zoneRef {
	if rec.Flags&flagZones == 0 {
		return nil
	}
	return &zoneRef{lane: laneRef{z: q.zoneOf(rec.TaskType, rec.ItemSpace)}, dead: true}
}

// forgetZone clears what a zones job keeps besides its key: blobs, the
// lookup index entry. A dead letter's blobs are cleared blindly (it has no
// job value saying whether they exist).
func (q *Queue) forgetZone(tr kv.Transaction, info JobInfo) {
	r := info.zl
	z := r.lane.z
	if r.dead || r.v.Flags&flagBlob != 0 {
		tr.Clear(z.blobKey(info.ID))
	}
	if r.dead || r.v.Flags&flagCkptBlob != 0 {
		tr.Clear(z.ckptKey(info.ID))
	}
	if !r.dead {
		q.indexClear(tr, info.ID, r.v.Flags)
	}
}

// cancelZoneTx deletes a live zones job lookup found. A worker holding it
// finds its key gone at its next lease operation (ErrLeaseLost).
//
// Keys: read-conflict keys on S (2, "i", id) and the job key; clears both,
// the job's blobs and its unique key; sets its outcome when Waitable and
// its finished record when it has retention (retainTx).
func (q *Queue) cancelZoneTx(tr kv.Transaction, info JobInfo, key []byte) error {
	r := info.zl
	if err := tr.AddReadConflictKey(q.zk.indexKey(info.ID)); err != nil {
		return err
	}
	if err := tr.AddReadConflictKey(key); err != nil {
		return err
	}
	tr.Clear(key)
	q.forgetZone(tr, info)
	if r.v.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(info.TaskType, r.v.UniqueKey))
	}
	q.recordOutcome(tr, info.ID, r.v.Flags, OutcomeCancelled, r.v.Attempt, "")
	q.retainTx(tr, finish{
		id: info.ID, kind: OutcomeCancelled, taskType: info.TaskType, itemSpace: info.ItemSpace, prio: r.lane.prio,
		v: &r.v, payload: info.Payload, now: q.Now(),
	})
	return nil
}

// runNowZoneTx moves a scheduled zones job's key to nowMs (same lane,
// same value) and covers the lane, so that its pointer vests by then.
//
// Keys: reads the job key (serializable: a claim or cancel meanwhile
// conflicts) and the lane state (cover) and, for a short-job task type, the
// lane's hand-out mark (vestAfterHandout); clears the old key, sets the new
// one and S (2, "i", id); may move the lane's pointer.
func (q *Queue) runNowZoneTx(tr kv.Transaction, info JobInfo, key []byte, nowMs int64) error {
	r := info.zl
	v, err := tr.Get(key).Get()
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("%w: %s moved meanwhile", ErrNotFound, info.ID)
	}
	// Never behind a short-job holder's hand-out mark (issue 22, item 1).
	vestMs, err := q.vestAfterHandout(tr, r.lane, nowMs, info.ID)
	if err != nil {
		return err
	}
	tr.Clear(key)
	tr.Set(r.lane.jobKey(vestMs, info.ID), v)
	q.indexSet(tr, r.lane, vestMs, info.ID, r.v.Flags)
	tr.Add(q.k.wakeKey(info.TaskType), le64(1))
	return q.cover(tr, r.lane, vestMs, nowMs)
}
