package quick

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

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

	// Errors are the errors of the job's last failed attempts (at most 5,
	// oldest first), kept only for a job with retention
	// (TaskTypeOptions.Retain, NewJob.Retain); LastError is the last.
	Errors []AttemptError
	// For a completed or cancelled job whose finished record is kept
	// (StateCompleted, StateCancelled): when its last run was leased (zero
	// if unknown: short-job mode, or never run), when it finished, and
	// when its record expires. Payload is kept only up to 1 kB
	// (InlinePayload); PayloadSize is its size when known.
	StartedAt   time.Time
	FinishedAt  time.Time
	ExpiresAt   time.Time
	PayloadSize int

	// zl is where the job's key is (lookup.go), for Cancel and RunNow; for
	// a dead letter, the zone it came from.
	zl *zoneRef
	// retainMs is a dead letter's own retention (NewJob.Retain), for a
	// cancel's finished record.
	retainMs int64
}

// Get returns a job by ID: a live job, a dead letter, or a finished job
// whose record its retention keeps (StateCompleted or StateCancelled, with
// its attempts, errors and times).
//
// Cost: two round trips of point reads, whatever the backlog. First the
// dead letter's record S(1,"j",id), the finished record S(1,"f",id), the
// enqueue marker S(1,"m",id) and the lookup index entry S(2,"i",id) at
// once; then the job key and payload blob the index entry points to. See
// docs/design.md, "Lookup by ID". An ID found nowhere is ErrNotTrackable
// (which wraps ErrNotFound): it may be a pending job of an Untracked task
// type, or a finished job that was not retained (or whose retention
// ended).
func (q *Queue) Get(ctx context.Context, id ID) (JobInfo, error) {
	var info JobInfo
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		info, _, err = q.lookup(tr.Snapshot(), id)
		return err
	})
	return info, err
}

// lookup finds a job by ID: a dead letter by its record, a retained
// finished job by its finished record, a finished job by its enqueue
// marker, a live job through its lookup index entry (then key is its job
// key).
//
// Keys: point reads of S(1,"j",id), S(1,"f",id), S(1,"m",id) and
// S(2,"i",id), then of the job key and its payload blob (lookupZone).
func (q *Queue) lookup(rt kv.ReadTransaction, id ID) (JobInfo, []byte, error) {
	rf := rt.Get(q.k.jobKey(id))
	ff := rt.Get(q.finKey(id))
	mf := rt.Get(q.k.markKey(id))
	zf := rt.Get(q.zk.indexKey(id))
	rv, err := rf.Get()
	if err != nil {
		return JobInfo{}, nil, err
	}
	if rv == nil {
		fv, err := ff.Get()
		if err != nil {
			return JobInfo{}, nil, err
		}
		if fv != nil {
			rec, err := decodeFinished(id, fv)
			if err != nil {
				return JobInfo{}, nil, err
			}
			return finishedInfo(id, &rec), nil, nil
		}
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
	rec, err := decodeDeadRecord(id, rv)
	if err != nil {
		return JobInfo{}, nil, err
	}
	info := JobInfo{
		ID: id, TaskType: rec.TaskType, Priority: Priority(rec.Priority), ItemSpace: rec.ItemSpace,
		MaxAttempts: int(rec.MaxAttempts), CreatedAt: time.UnixMilli(rec.CreatedAtMs), LastError: rec.LastError,
		UniqueKey: rec.UniqueKey, Payload: rec.Payload, Attempt: int(rec.Attempts), Waitable: rec.Flags&flagWaitable != 0,
		State: StateDead, DeadAt: time.UnixMilli(rec.DeadAtMs), Errors: rec.History, retainMs: rec.RetainMs,
	}
	info.zl = q.deadZoneRef(&rec)
	return info, nil, nil
}
