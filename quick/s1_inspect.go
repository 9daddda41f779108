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

// ListOptions select jobs to list.
type ListOptions struct {
	TaskType string
	// Lanes to list; nil lists every lane.
	Lanes []int
	// State filters by state (scheduled, ready or leased); zero lists all.
	State State
	// Limit is the most jobs returned; default 100.
	Limit int
	// After resumes a listing: pass the previous page's Next.
	After Cursor
}

// JobPage is a page of a listing.
type JobPage struct {
	Jobs []JobInfo
	// Next resumes the listing; empty at the end.
	Next Cursor
}

// List lists a task type's scheduled, ready and leased jobs, lane by lane,
// priority by priority, in vesting order. Payloads are not read.
func (q *Queue) List(ctx context.Context, opts ListOptions) (JobPage, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return JobPage{}, err
	}
	if opts.State == StateDead || opts.State == StateFinished {
		return JobPage{}, fmt.Errorf("%w: List shows scheduled, ready and leased jobs; use ListDead for dead letters", ErrInvalidOption)
	}
	if opts.Limit <= 0 {
		opts.Limit = 100
	}
	prefix := q.k.sched().Sub(opts.TaskType).Bytes()
	after, err := opts.After.key(cursorList, opts.TaskType, prefix)
	if err != nil {
		return JobPage{}, err
	}
	lanes := opts.Lanes
	if lanes == nil {
		for l := 0; l < legacyLanes; l++ {
			lanes = append(lanes, l)
		}
	}
	var page JobPage
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		page = JobPage{}
		var lastKey []byte
		nowMs := q.Now().UnixMilli()
		snap := tr.Snapshot()
		for _, lane := range lanes {
			for _, p := range priorities {
				r := q.k.laneRange(opts.TaskType, lane, p)
				if after != nil {
					if string(after) >= string(r.End) {
						continue
					}
					if string(after) >= string(r.Begin) {
						r.Begin = kv.KeyAfter(after)
					}
				}
				it := snap.GetRange(r, kv.RangeOptions{Limit: opts.Limit + 1}).Iterator()
				for it.Advance() {
					kvp, err := it.Get()
					if err != nil {
						return err
					}
					if len(page.Jobs) == opts.Limit {
						page.Next = makeCursor(cursorList, opts.TaskType, prefix, lastKey)
						return nil
					}
					sk, err := q.k.parseSched(kvp.Key)
					if err != nil {
						continue
					}
					var sv schedValue
					if err := sv.unmarshal(kvp.Value); err != nil {
						continue
					}
					st := stateOf(sv, sk.VestMs, nowMs)
					if opts.State != 0 && st != opts.State {
						continue
					}
					page.Jobs = append(page.Jobs, JobInfo{
						ID: sk.ID, TaskType: sk.TaskType, Priority: sk.Priority, State: st, Lane: sk.Lane,
						RunAt: time.UnixMilli(sk.VestMs), Attempt: int(sv.Attempt), MaxAttempts: int(sv.MaxAttempts),
						Holder: sv.Holder, UniqueKey: sv.UniqueKey, HasCheckpoint: sv.hasCheckpoint(),
					})
					lastKey = kvp.Key
				}
			}
		}
		return nil
	})
	if err != nil {
		return JobPage{}, fmt.Errorf("quick: list %s: %w", opts.TaskType, err)
	}
	return page, nil
}

// LaneStats are one lane's counts.
type LaneStats struct {
	Lane      int
	Ready     int
	Leased    int
	Scheduled int
	// OldestReady is when the longest-waiting ready job vested (zero if none).
	OldestReady time.Time
	// Exact is false when a priority range held more keys than the scan
	// budget: the counts are then lower bounds.
	Exact bool
}

// LaneCountsOptions select what LaneCounts scans.
type LaneCountsOptions struct {
	TaskType string
	// PerRange bounds each range read (one per lane and priority); default
	// 1,000.
	PerRange int
}

// LaneCounts counts each lane's jobs with one bounded range read per lane
// and priority, all in flight at once. No counter can track "ready", since
// it changes with the clock; so counts come from scans of at most perRange
// keys each (default 1,000), labelled inexact when a scan was cut short.
// A queue of 100,000 jobs in 16 lanes costs 48 range reads and at most
// 48 × perRange keys read.
func (q *Queue) LaneCounts(ctx context.Context, opts LaneCountsOptions) ([]LaneStats, error) {
	taskType, perRange := opts.TaskType, opts.PerRange
	if err := validTaskType(taskType); err != nil {
		return nil, err
	}
	if perRange <= 0 {
		perRange = 1000
	}
	var out []LaneStats
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		nowMs := q.Now().UnixMilli()
		snap := tr.Snapshot()
		rrs := make([][numPriorities]kv.RangeResult, legacyLanes)
		for lane := range rrs {
			for i, p := range priorities {
				rrs[lane][i] = snap.GetRange(q.k.laneRange(taskType, lane, p), kv.RangeOptions{Limit: perRange + 1})
			}
		}
		out = make([]LaneStats, legacyLanes)
		for lane := range rrs {
			st := LaneStats{Lane: lane, Exact: true}
			for i := range priorities {
				kvs, err := rrs[lane][i].GetSliceWithError()
				if err != nil {
					return err
				}
				if len(kvs) > perRange {
					st.Exact = false
					kvs = kvs[:perRange]
				}
				for _, p := range kvs {
					sk, err := q.k.parseSched(p.Key)
					if err != nil {
						continue
					}
					var sv schedValue
					if sv.unmarshal(p.Value) != nil {
						continue
					}
					switch stateOf(sv, sk.VestMs, nowMs) {
					case StateReady:
						st.Ready++
						if vt := time.UnixMilli(sk.VestMs); st.OldestReady.IsZero() || vt.Before(st.OldestReady) {
							st.OldestReady = vt
						}
					case StateLeased:
						st.Leased++
					case StateScheduled:
						st.Scheduled++
					}
				}
			}
			out[lane] = st
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quick: lane counts %s: %w", taskType, err)
	}
	return out, nil
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
