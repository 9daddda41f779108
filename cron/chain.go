package cron

import (
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// An occurrence is enqueued in one of two ways, both here: by the
// transaction that completes (or dead-letters) its predecessor, which is
// how a schedule carries on, and by ensureTx, which starts a chain
// (Register) or restarts a broken one (Repair).

// successor is the occurrence scheduled after another finished.
type successor struct {
	ID quick.ID
	At time.Time
	// Duplicate is set when the occurrence was already there (a concurrent
	// Register or Repair, or a schedule whose task type changed and whose
	// next occurrence Register already enqueued).
	Duplicate bool
}

// successorTime is the time of the occurrence after the one scheduled at
// after, under the missed-run policy. It is computed from the schedule and
// the previous occurrence's scheduled time, never from when it ran, so a
// late or retried run does not shift the schedule. Zero means the schedule
// has no more times.
func successorTime(p plan, policy MissedRuns, after, now time.Time) time.Time {
	n := p.next(after)
	if n.IsZero() || n.After(now) {
		return n
	}
	if policy == SkipAll {
		return p.next(now)
	}
	return p.latest(n, now)
}

// occurrenceJob is the job of the occurrence of d at time at, enqueued by
// the completion of the occurrence at after (zero: by Register or Repair).
func occurrenceJob(q *quick.Queue, d definition, at, after, now time.Time) quick.NewJob {
	env := envelope{Name: d.Name, ScheduledAt: at, Gen: d.Gen, Payload: d.Payload, After: after}
	return quick.NewJob{
		ID:          occurrenceID(d.Name, d.Gen, at, now, q.Options().IdempotencyWindow),
		TaskType:    d.TaskType,
		Payload:     env.marshal(),
		Priority:    d.Priority,
		RunAt:       at,
		MaxAttempts: d.MaxAttempts,
		UniqueKey:   UniqueKey(d.Name),
	}
}

// loadTx reads a schedule's definition with a serializable read, so a
// concurrent Register or Remove of the schedule conflicts with tr, and
// parses it. found is false when there is none.
func loadTx(tr kv.ReadTransaction, q *quick.Queue, name string, now time.Time) (d definition, p plan, found bool, err error) {
	v, err := tr.Get(defKey(q, name)).Get()
	if err != nil || v == nil {
		return d, p, false, err
	}
	d, p, err = decodeDefinition(name, v, now)
	return d, p, true, err
}

// decodeDefinition decodes and checks a stored definition. Its errors wrap
// ErrCorrupt or ErrInvalidSpec.
func decodeDefinition(name string, v []byte, now time.Time) (definition, plan, error) {
	d, err := unmarshalDefinition(name, v)
	if err != nil {
		return d, plan{}, err
	}
	s, p, err := validate(d.Schedule, now)
	if err != nil {
		if !errors.Is(err, ErrInvalidSpec) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return d, plan{}, err
	}
	d.Schedule = s
	return d, p, nil
}

// isBadDefinition reports whether err is about a stored definition rather
// than the database: retrying cannot help.
func isBadDefinition(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalidSpec)
}

// completeTx schedules the successor of the occurrence whose job payload is
// payload, inside tr: the transaction that completes (or dead-letters) the
// occurrence's job, current. The completion must already be applied in tr,
// so that quick's unique key is free; read-your-writes lets EnqueueTx see it
// cleared. Both commit together or not at all, so the schedule never loses
// its next occurrence and never gains two.
//
// With no definition (the schedule was removed) it schedules nothing. A
// definition that does not decode or parse schedules nothing either, and
// the error is returned wrapped in ErrCorrupt or ErrInvalidSpec for the
// caller to log; it does not fail the transaction's other writes unless the
// caller chooses so. Its callers are Handle and HandleTx, and RawHandler
// for workers that are not package worker's; it is unexported since its
// one correct use (after the completion, in the same transaction) is what
// those wrap.
func completeTx(tr kv.Transaction, q *quick.Queue, payload []byte, current quick.ID) (successor, error) {
	env, err := unmarshalEnvelope(payload)
	if err != nil {
		return successor{}, err
	}
	return scheduleNextTx(tr, q, env, current)
}

func scheduleNextTx(tr kv.Transaction, q *quick.Queue, env envelope, current quick.ID) (successor, error) {
	now := q.Now()
	d, p, found, err := loadTx(tr, q, env.Name, now)
	if err != nil || !found {
		return successor{}, err
	}
	at := successorTime(p, d.MissedRuns, env.ScheduledAt, now)
	if at.IsZero() {
		return successor{}, nil
	}
	if mutant.On("cron.successor") {
		return successor{}, nil // deliberate break: the chain ends here
	}
	res, _, err := enqueueTx(tr, q, d, at, env.ScheduledAt, now)
	if err != nil {
		return successor{}, err
	}
	if res.Duplicate && res.ID == current {
		return successor{}, fmt.Errorf("%w (schedule %q, job %s)", ErrCompletionOrder, d.Name, current)
	}
	return res, nil
}

// ensureTx makes sure schedule d has a pending or running occurrence: if
// none holds its unique key, it enqueues the one at the schedule's next
// time after now and after from (zero: now only). The ID is deterministic,
// so concurrent callers enqueue the same job at most once; EnqueueTx reads
// the unique key serializably, so a concurrent completion that enqueued a
// successor conflicts.
func ensureTx(tr kv.Transaction, q *quick.Queue, d definition, p plan, now, from time.Time) (successor, quick.ID, error) {
	if d.PrevTaskType != "" {
		// An occurrence still running under the task type before the last
		// change holds the chain: its completion enqueues the next.
		hv, err := tr.Get(holderKey(q, d.PrevTaskType, d.Name)).Get()
		if err != nil {
			return successor{}, quick.ID{}, err
		}
		if len(hv) == len(quick.ID{}) {
			return successor{ID: quick.ID(hv), Duplicate: true}, quick.ID{}, nil
		}
	}
	at := p.next(now)
	if from.After(now) {
		at = p.next(from)
	}
	if at.IsZero() {
		return successor{}, quick.ID{}, nil
	}
	// Recording from as After lets a later change carry on after it too.
	return enqueueTx(tr, q, d, at, from, now)
}

// enqueueTx enqueues the occurrence of d at time at, unless an occurrence
// holds the schedule's unique key. It returns the outcome and the ID it
// enqueued under.
//
// The deterministic ID is normally free or the live occurrence's own. It is
// taken by a finished job only when an occurrence of this very time and
// generation was enqueued before and left the queue early: cancelled by
// hand, or dead-lettered by a claim, and then restored by Repair at the
// same time. quick keeps that job's enqueue marker for its idempotency
// window, so the ID would enqueue nothing: the occurrence gets a random ID
// instead. Safety does not depend on the ID: EnqueueTx reads the unique key
// serializably, so of two transactions enqueueing an occurrence of the
// schedule one conflicts and then finds the other's.
func enqueueTx(tr kv.Transaction, q *quick.Queue, d definition, at, after, now time.Time) (successor, quick.ID, error) {
	job := occurrenceJob(q, d, at, after, now)
	res, err := q.EnqueueTx(tr, job)
	if err != nil {
		return successor{}, job.ID, fmt.Errorf("cron: schedule %q: enqueue the occurrence at %v: %w", d.Name, at, err)
	}
	if res[0].Duplicate && res[0].ID == job.ID {
		hv, err := tr.Get(holderKey(q, d.TaskType, d.Name)).Get()
		if err != nil {
			return successor{}, job.ID, err
		}
		if len(hv) != len(job.ID) || quick.ID(hv) != job.ID {
			job.ID = quick.NewID(now)
			if res, err = q.EnqueueTx(tr, job); err != nil {
				return successor{}, job.ID, fmt.Errorf("cron: schedule %q: enqueue the occurrence at %v: %w", d.Name, at, err)
			}
		}
	}
	return successor{ID: res[0].ID, At: at, Duplicate: res[0].Duplicate}, job.ID, nil
}
