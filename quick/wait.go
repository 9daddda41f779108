package quick

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Waiting for a job. A waitable job (NewJob.Waitable, or a task type in
// Options.WaitableTypes) gets an outcome key, S(1,"o",id), written by the
// transaction that finishes it: the ack that completes it, the one that
// dead-letters it, or Cancel. Wait arms a kv watch on that key, so a waiter
// costs nothing while the job runs and wakes in the commit that finishes
// it. Outcome keys sort by the time in the job's version 7 ID, so
// PurgeOutcomes deletes the expired ones with one range clear, as
// PurgeMarkers does for enqueue markers. docs/design.md, "Waiting for a
// job", has the costs and the alternatives.

// OutcomeKind is how a job ended.
type OutcomeKind int

const (
	// OutcomePending: the job has not finished.
	OutcomePending OutcomeKind = iota
	// OutcomeCompleted: its handler completed it.
	OutcomeCompleted
	// OutcomeDeadLettered: it failed for good (or its handler
	// dead-lettered it) and sits in the dead letters.
	OutcomeDeadLettered
	// OutcomeCancelled: it was cancelled (Cancel, CancelMatching,
	// AckCancel, a handler's worker.Cancel).
	OutcomeCancelled
	// OutcomeFinished: it finished, but how is not known: it was neither
	// waitable nor retained, or its outcome was purged.
	OutcomeFinished
)

func (k OutcomeKind) String() string {
	switch k {
	case OutcomePending:
		return "pending"
	case OutcomeCompleted:
		return "completed"
	case OutcomeDeadLettered:
		return "dead_lettered"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeFinished:
		return "finished"
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is how a job ended, as recorded when it finished.
type Outcome struct {
	ID         ID
	Kind       OutcomeKind
	FinishedAt time.Time // zero unless recorded
	Attempts   int       // runs started
	Error      string    // the last error of a dead-lettered job, a cancel's reason
}

// Final reports whether the job will not change any more (everything but
// pending; a dead-lettered job can still be requeued).
func (o Outcome) Final() bool { return o.Kind != OutcomePending }

// ErrNotWaitable is returned by Wait for a job enqueued without
// NewJob.Waitable (and not of a type in Options.WaitableTypes): no outcome
// will be recorded for it, so there is nothing to wait on.
var ErrNotWaitable = errors.New("quick: job is not waitable")

func (q *Queue) outcomeSpace() tuple.Subspace { return q.k.root.Sub("o") }

func (q *Queue) outcomeKey(id ID) []byte {
	return q.outcomeSpace().Pack(tuple.Tuple{tuple.UUID(id)})
}

// waitFlag is the flag a new job carries if its outcome is to be recorded.
func (q *Queue) waitFlag(j NewJob) uint64 {
	if j.Waitable || slices.Contains(q.opts.WaitableTypes, j.TaskType) {
		return flagWaitable
	}
	return 0
}

// recordOutcome writes a waitable job's outcome in the transaction that
// finishes it; for other jobs it writes nothing.
//
// Keys: sets S(1,"o",id) (about 40 bytes, plus the error text of a dead
// letter).
func (q *Queue) recordOutcome(tr kv.Transaction, id ID, flags uint64, kind OutcomeKind, attempts int64, errText string) {
	if flags&flagWaitable == 0 {
		return
	}
	b := wire.AppendVarint(nil, 1, uint64(kind))
	b = wire.AppendVarint(b, 2, uint64(q.Now().UnixMilli()))
	b = wire.AppendVarint(b, 3, uint64(attempts))
	b = wire.AppendString(b, 4, errText)
	tr.Set(q.outcomeKey(id), b)
}

// clearOutcome forgets a waitable job's outcome when it runs again
// (Requeue), so waiters wait for the new run.
func (q *Queue) clearOutcome(tr kv.Transaction, id ID, flags uint64) {
	if flags&flagWaitable != 0 {
		tr.Clear(q.outcomeKey(id))
	}
}

func decodeOutcome(id ID, b []byte) (Outcome, error) {
	o := Outcome{ID: id}
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			o.Kind = OutcomeKind(x)
		case 2:
			o.FinishedAt = time.UnixMilli(int64(x))
		case 3:
			o.Attempts = int(x)
		case 4:
			o.Error = string(raw)
		}
		return nil
	})
	if err == nil && (o.Kind < OutcomeCompleted || o.Kind > OutcomeCancelled) {
		err = fmt.Errorf("%w: outcome kind %d", ErrCorrupt, o.Kind)
	}
	return o, err
}

// outcomeTx reads a job's outcome: the recorded one, or what the record,
// the zones lookup index and the enqueue marker tell. It also says whether
// the job is waitable. (The zones enqueue marker S(2,"m",id) tells nothing
// here: it stays while an Untracked job is pending, and is one per enqueue
// transaction.)
//
// Keys: reads S(1,"o",id) (serializable, so a watch set after it sees any
// later change), and snapshot reads of S(1,"j",id), S(1,"f",id),
// S(1,"m",id) and S(2,"i",id), all in one round trip.
func (q *Queue) outcomeTx(tr kv.Transaction, id ID) (Outcome, bool, error) {
	of := tr.Get(q.outcomeKey(id))
	snap := tr.Snapshot()
	rf := snap.Get(q.k.jobKey(id))
	ff := snap.Get(q.finKey(id))
	mf := snap.Get(q.k.markKey(id))
	zf := snap.Get(q.zk.indexKey(id))
	ov, err := of.Get()
	if err != nil {
		return Outcome{}, false, err
	}
	if ov != nil {
		o, err := decodeOutcome(id, ov)
		if err != nil {
			return Outcome{}, false, fmt.Errorf("quick: outcome of %s: %w", id, err)
		}
		return o, true, nil
	}
	rv, err := rf.Get()
	if err != nil {
		return Outcome{}, false, err
	}
	if rv == nil {
		// A retained finished job has its finished record.
		fv, err := ff.Get()
		if err != nil {
			return Outcome{}, false, err
		}
		if fv != nil {
			f, err := decodeFinished(id, fv)
			if err != nil {
				return Outcome{}, false, err
			}
			return outcomeOfFinished(id, &f), f.Flags&flagWaitable != 0, nil
		}
		// A pending zones job has no record: its lookup index entry says
		// it is there, and whether it is waitable.
		zv, err := zf.Get()
		if err != nil {
			return Outcome{}, false, err
		}
		if zv != nil {
			var ix indexValue
			if err := ix.unmarshal(zv); err != nil {
				return Outcome{}, false, fmt.Errorf("quick: job %s: %w", id, err)
			}
			return Outcome{ID: id, Kind: OutcomePending}, ix.Flags&flagWaitable != 0, nil
		}
		mv, err := mf.Get()
		if err != nil {
			return Outcome{}, false, err
		}
		if mv == nil {
			return Outcome{}, false, fmt.Errorf("%w: %s", ErrNotTrackable, id)
		}
		return Outcome{ID: id, Kind: OutcomeFinished}, false, nil
	}
	rec, err := decodeDeadRecord(id, rv)
	if err != nil {
		return Outcome{}, false, err
	}
	return Outcome{ID: id, Kind: OutcomeDeadLettered, FinishedAt: time.UnixMilli(rec.DeadAtMs),
		Attempts: int(rec.Attempts), Error: rec.LastError}, rec.Flags&flagWaitable != 0, nil
}

// Outcome returns how a job ended, or OutcomePending if it has not. A
// finished job that was not waitable (or whose outcome was purged) is
// OutcomeFinished while its enqueue marker lasts; after that, ErrNotFound.
//
// A pending job is found through its lookup index entry (every job unless
// its task type is Untracked: then ErrNotTrackable, which wraps
// ErrNotFound, until it finishes).
//
// A finished zones job that was not waitable (or whose outcome was purged)
// has nothing left to tell: ErrNotTrackable, as for an unknown ID.
//
// A job with retention (TaskTypeOptions.Retain) tells its outcome from its
// finished record while it is kept, waitable or not.
//
// Cost: one transaction of five point reads in one round trip (outcome,
// dead letter's record, finished record, enqueue marker, lookup index).
func (q *Queue) Outcome(ctx context.Context, id ID) (Outcome, error) {
	var o Outcome
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		var err error
		o, _, err = q.outcomeTx(tr, id)
		return err
	})
	return o, err
}

// Wait blocks until a waitable job finishes (completed, dead-lettered or
// cancelled) or ctx is done, without polling: each round reads the job's
// outcome and, while there is none, arms a kv watch on its outcome key and
// sleeps until the finishing transaction sets it. A job that was not
// enqueued waitable returns ErrNotWaitable (if it already finished:
// OutcomeFinished). A dead-lettered job is an outcome: Wait returns it,
// though Requeue may run the job again.
//
// A pending job of an Untracked task type cannot be found by ID:
// ErrNotTrackable (which wraps ErrNotFound).
//
// Cost per round: one transaction (a read version, five point reads and
// one watch, which FDB counts against its per-client watch limit of 10,000
// by default: a process cannot wait on more jobs than that at once). A job
// that finishes while waited on takes two rounds.
func (q *Queue) Wait(ctx context.Context, id ID) (Outcome, error) {
	for {
		var (
			o        Outcome
			waitable bool
			w        kv.Watch
		)
		err := q.db.Transact(ctx, func(tr kv.Transaction) error {
			if w != nil {
				w.Cancel() // an earlier attempt's
				w = nil
			}
			var err error
			if o, waitable, err = q.outcomeTx(tr, id); err != nil {
				return err
			}
			if o.Kind == OutcomePending && waitable {
				w = tr.Watch(q.outcomeKey(id))
			}
			return nil
		})
		if err != nil {
			if w != nil {
				w.Cancel()
			}
			return Outcome{}, fmt.Errorf("quick: wait for %s: %w", id, err)
		}
		switch {
		case o.Kind != OutcomePending:
			return o, nil
		case !waitable:
			return o, fmt.Errorf("%w: %s (enqueue it with NewJob.Waitable, or list its type in Options.WaitableTypes)", ErrNotWaitable, id)
		}
		err = w.Wait(ctx)
		if err != nil {
			w.Cancel()
			if ctx.Err() != nil {
				return o, fmt.Errorf("quick: wait for %s: %w", id, ctx.Err())
			}
			return o, fmt.Errorf("quick: wait for %s: %w", id, err)
		}
	}
}

// PurgeOutcomes deletes the recorded outcomes of jobs created more than
// Options.OutcomeRetention ago. Outcome keys sort by the time in their
// version 7 ID, so this is one range clear with no read; run it now and
// then, as PurgeMarkers.
func (q *Queue) PurgeOutcomes(ctx context.Context) error {
	space := q.outcomeSpace()
	cut := space.Pack(tuple.Tuple{tuple.UUID(idFloor(q.Now().Add(-q.opts.OutcomeRetention)))})
	return q.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: rangeOf(space).Begin, End: cut})
		return nil
	})
}
