package quick

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// State is where a job stands.
type State int

// The states a job can be in.
const (
	// StateScheduled: vests in the future, not leased.
	StateScheduled State = iota + 1
	// StateReady: vested and waiting for a worker (including a job whose
	// lease lapsed).
	StateReady
	// StateLeased: a worker holds a live lease.
	StateLeased
	// StateDead: in the dead letters.
	StateDead
	// StateFinished: the job is gone (completed or cancelled) but its enqueue
	// marker is still kept.
	StateFinished
)

func (s State) String() string {
	switch s {
	case StateScheduled:
		return "scheduled"
	case StateReady:
		return "ready"
	case StateLeased:
		return "leased"
	case StateDead:
		return "dead"
	case StateFinished:
		return "finished"
	}
	return "unknown"
}

// ParseState reads a state name.
func ParseState(s string) (State, error) {
	for st := StateScheduled; st <= StateFinished; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown state %q (want scheduled, ready, leased, dead or finished)", ErrInvalidOption, s)
}

// JobInfo describes a job for inspection.
type JobInfo struct {
	ID            ID
	TaskType      string
	Priority      Priority
	ItemSpace     string
	State         State
	Lane          int
	RunAt         time.Time // vesting time of its schedule key (lease deadline when leased)
	Attempt       int
	MaxAttempts   int
	Holder        string
	CreatedAt     time.Time
	DeadAt        time.Time
	LastError     string
	UniqueKey     string
	Payload       []byte
	HasCheckpoint bool
	// Waitable says the job's outcome will be recorded (NewJob.Waitable).
	Waitable bool

	// zl is set for a zones-layout job (lookup.go): where its key is, for
	// Cancel and RunNow.
	zl *zoneRef
}

func stateOf(sv schedValue, vestMs, nowMs int64) State {
	switch {
	case vestMs > nowMs && sv.Token != 0:
		return StateLeased
	case vestMs > nowMs:
		return StateScheduled
	}
	return StateReady
}

// Get returns a job by ID.
//
// Cost: two round trips of point reads, whatever the backlog: the record,
// the enqueue marker and the lease index S(1,"l",id) at once, then the
// schedule key where the record placed the job and, for a job claimed
// since, where the lease index says its lease is. See docs/design.md,
// "Lookup by ID".
//
// A zones-layout job is found through its lookup index entry S(2,"i",id)
// (Trackable task types only; read in the first round trip when the queue's
// Layout is LayoutZones, else in a second one once the schema-1 keys are
// missing), then its job key and payload blob at once. An ID found nowhere
// is ErrNotTrackable (which wraps ErrNotFound) on a zones queue.
func (q *Queue) Get(ctx context.Context, id ID) (JobInfo, error) {
	var info JobInfo
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		info, _, err = q.lookup(tr.Snapshot(), id)
		return err
	})
	return info, err
}

// lookup finds a job's record and, unless it is dead, its schedule key.
func (q *Queue) lookup(rt kv.ReadTransaction, id ID) (JobInfo, []byte, error) {
	now := q.Now()
	rf := rt.Get(q.k.jobKey(id))
	mf := rt.Get(q.k.markKey(id))
	lf := rt.Get(q.k.leaseKey(id))
	// The lookup index is read in the same round trip.
	zf := rt.Get(q.zk.indexKey(id))
	rv, err := rf.Get()
	if err != nil {
		return JobInfo{}, nil, err
	}
	if rv == nil {
		mv, err := mf.Get()
		if err != nil {
			return JobInfo{}, nil, err
		}
		if mv != nil {
			return JobInfo{ID: id, State: StateFinished}, nil, nil
		}
		zv, err := zf.Get()
		if err != nil {
			return JobInfo{}, nil, err
		}
		return q.lookupZone(rt, id, zv)
	}
	var rec record
	if err := rec.unmarshal(rv); err != nil {
		return JobInfo{}, nil, fmt.Errorf("quick: job %s: %w", id, err)
	}
	info := JobInfo{
		ID: id, TaskType: rec.TaskType, Priority: Priority(rec.Priority), ItemSpace: rec.ItemSpace,
		MaxAttempts: int(rec.MaxAttempts), CreatedAt: time.UnixMilli(rec.CreatedAtMs), LastError: rec.LastError,
		UniqueKey: rec.UniqueKey, Payload: rec.Payload, Attempt: int(rec.Attempts), Waitable: rec.Flags&flagWaitable != 0,
	}
	if rec.State == stateDead {
		info.State = StateDead
		info.DeadAt = time.UnixMilli(rec.DeadAtMs)
		info.zl = q.deadZoneRef(&rec)
		return info, nil, nil
	}
	lv, err := lf.Get()
	if err != nil {
		return JobInfo{}, nil, err
	}
	key, sv, err := q.findSched(rt, &rec, id, lv)
	if err != nil {
		return JobInfo{}, nil, err
	}
	if key == nil {
		// Either damage, or a claim by a worker built before the lease index
		// (it moved the key without indexing it): the job is found again
		// once that lease ends, within MaxLease.
		return JobInfo{}, nil, fmt.Errorf("%w: %s has a record but no schedule key where it was placed or where the lease index points (a worker older than the lease index may hold it, until its lease ends)", ErrCorrupt, id)
	}
	sk, err := q.k.parseSched(key)
	if err != nil {
		return JobInfo{}, nil, err
	}
	info.Lane, info.RunAt = sk.Lane, time.UnixMilli(sk.VestMs)
	info.State = stateOf(sv, sk.VestMs, now.UnixMilli())
	info.Attempt, info.Holder, info.HasCheckpoint = int(sv.Attempt), sv.Holder, sv.hasCheckpoint()
	return info, key, nil
}

// findSched locates a job's schedule key with at most two point reads: where
// the record last placed it (enqueue, fail, snooze, release, requeue) and
// where the lease index says a claim or extension moved it. A job has one
// schedule key, so at most one of them exists.
func (q *Queue) findSched(rt kv.ReadTransaction, rec *record, id ID, leaseIdx []byte) ([]byte, schedValue, error) {
	prio := Priority(rec.Priority)
	keys := [][]byte{q.k.schedKey(rec.TaskType, int(rec.PlacedLane), prio, rec.PlacedAtMs, id)}
	if leaseIdx != nil {
		ms, err := decodeLeaseIndex(leaseIdx)
		if err != nil {
			return nil, schedValue{}, fmt.Errorf("quick: job %s: lease index: %w", id, err)
		}
		keys = append(keys, q.k.schedKey(rec.TaskType, laneOf(rec.TaskType, prio, ms, id, legacyLanes), prio, ms, id))
	}
	fs := make([]kv.Future[[]byte], len(keys))
	for i, k := range keys {
		fs[i] = rt.Get(k)
	}
	for i, f := range fs {
		v, err := f.Get()
		if err != nil {
			return nil, schedValue{}, err
		}
		if v != nil {
			var sv schedValue
			return keys[i], sv, sv.unmarshal(v)
		}
	}
	return nil, schedValue{}, nil
}

// Cancel deletes a job that is scheduled, ready or leased, or removes it
// from the dead letters. A worker holding it loses its lease: its next lease
// operation returns ErrLeaseLost.
func (q *Queue) Cancel(ctx context.Context, id ID) error {
	applied := false
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if maybeCommitted && applied && (info.State == StateFinished || IsNotFound(err)) {
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

// cancelTx deletes a job lookup found (info, and its schedule key).
func (q *Queue) cancelTx(tr kv.Transaction, info JobInfo, key []byte) error {
	id := info.ID
	if info.State == StateFinished {
		return fmt.Errorf("%w: %s already finished", ErrNotFound, id)
	}
	if info.zl != nil && !info.zl.dead {
		return q.cancelZoneTx(tr, info, key)
	}
	// Conflict with a claim or ack that moves the key meanwhile.
	if err := tr.AddReadConflictKey(q.k.jobKey(id)); err != nil {
		return err
	}
	if key != nil {
		if err := tr.AddReadConflictKey(key); err != nil {
			return err
		}
		tr.Clear(key)
	}
	q.forget(tr, info)
	if info.Waitable {
		q.recordOutcome(tr, id, flagWaitable, OutcomeCancelled, int64(info.Attempt), "")
	}
	return nil
}

// forget clears what a job keeps besides its schedule key.
func (q *Queue) forget(tr kv.Transaction, info JobInfo) {
	tr.Clear(q.k.jobKey(info.ID))
	tr.Clear(q.k.ckptKey(info.ID))
	tr.Clear(q.k.leaseKey(info.ID))
	if info.zl != nil {
		q.forgetZone(tr, info)
	}
	if info.State == StateDead {
		tr.Clear(q.k.deadKey(info.TaskType, info.DeadAt.UnixMilli(), info.ID))
		tr.Add(q.k.deadCountKey(info.TaskType), le64(-1))
	} else if info.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(info.TaskType, info.UniqueKey))
	}
}

// TaskTypes lists the task types ever enqueued.
func (q *Queue) TaskTypes(ctx context.Context) ([]string, error) {
	var out []string
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		kvs, err := tr.Snapshot().GetRange(rangeOf(q.k.types), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := q.k.types.Unpack(p.Key)
			if err != nil || len(t) != 1 {
				continue
			}
			if s, ok := t[0].(string); ok {
				out = append(out, s)
			}
		}
		return nil
	})
	return out, err
}

// IsNotFound reports whether err means the job does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
