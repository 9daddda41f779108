package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// Occurrence is one run of a schedule, as its handler sees it.
type Occurrence struct {
	// Name is the schedule's name.
	Name string
	// ScheduledAt is the schedule time this occurrence stands for (it may
	// run later: workers were busy, it was retried, or it stands for the
	// missed times under RunOnce).
	ScheduledAt time.Time
	// Payload is the schedule's payload as it was when the occurrence was
	// enqueued.
	Payload []byte
	// Attempt is this run's number, from 1.
	Attempt int
	// JobID is the occurrence's job ID.
	JobID quick.ID
}

// TxHandler runs an occurrence and may return a function whose writes
// commit in the transaction that completes the occurrence and schedules its
// successor: an exactly-once effect for work that writes to FDB (the
// function may run more than once, as FDB retries, and must only use tr).
type TxHandler func(ctx context.Context, occ Occurrence) (commit func(tr kv.Transaction) error, err error)

// Handle registers h on w for the occurrences of the schedules whose
// TaskType is taskType. When h succeeds, the occurrence is completed and
// its successor enqueued in one transaction (worker.Job.CompleteWith), so a
// schedule never loses its next occurrence nor gains two, whatever fails.
//
// When h fails, the occurrence is retried after the queue's backoff, as any
// job; the next occurrence waits, so runs never overlap, and times missed
// meanwhile follow the schedule's MissedRuns policy. When its last attempt
// fails, the occurrence is dead-lettered and its successor enqueued in one
// transaction (DeadLetterWith): one bad run does not end the schedule.
// When h returns worker.Cancel(reason), the occurrence is cancelled, as
// any job whose handler cancels it (quick's cancelled state, not a dead
// letter), and its successor enqueued in the same transaction
// (CancelWith): a cancel ends this run, not the schedule, since the chain
// is the schedule (Remove ends it). worker.Snooze(d) runs the occurrence
// again after d, the chain waiting.
//
// Before running h, the handler reads the schedule's definition: an
// occurrence whose schedule was removed completes without running; one
// left from an earlier version of a changed schedule completes without
// running and enqueues the new version's next occurrence.
func Handle(w *worker.Worker, taskType string, h func(ctx context.Context, occ Occurrence) error, opts worker.HandlerOptions) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidSchedule)
	}
	return HandleTx(w, taskType, func(ctx context.Context, occ Occurrence) (func(kv.Transaction) error, error) {
		return nil, h(ctx, occ)
	}, opts)
}

// HandleTx is Handle for a handler with transactional effects.
func HandleTx(w *worker.Worker, taskType string, h TxHandler, opts worker.HandlerOptions) error {
	raw, err := RawHandler(w.Queue(), taskType, h)
	if err != nil {
		return err
	}
	// The workers that run occurrences share the repair of broken chains
	// (one of them every period); added once however many cron types.
	if err := w.AddDuty(RepairDuty(w.Queue(), 0)); err != nil {
		return err
	}
	return worker.RegisterRaw(w, taskType, raw, opts)
}

// RawHandler is the handler HandleTx registers, for a caller that wraps
// handlers before registering them with worker.RegisterRaw (to trace them,
// or to know when a run has fully ended: the returned handler returns only
// after the transaction that completes the occurrence and enqueues its
// successor has committed or failed). q must be the worker's queue.
func RawHandler(q *quick.Queue, taskType string, h TxHandler) (worker.Handler[[]byte], error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrInvalidSchedule)
	}
	r := &occRunner{q: q, h: h}
	r.log = r.q.Options().Logger.With("task_type", taskType)
	q.OnDeadLetter(taskType, r.onClaimDeadLetter)
	return r.run, nil
}

// onClaimDeadLetter is quick's DeadLetterHook for the occurrences: a claim
// that dead-letters an occurrence whose holders all vanished (no handler
// is left to schedule the next) enqueues its successor in the same
// transaction, so the chain goes on as after any dead-lettered occurrence.
// Only the database's errors fail the claim; an occurrence or definition
// that cannot be read is logged and left without a successor (Repair finds
// the chain broken), since failing the claim would meet it again forever.
func (r *occRunner) onClaimDeadLetter(tr kv.Transaction, job quick.DeadLettered) error {
	log := r.log.With("id", job.ID)
	env, err := unmarshalEnvelope(job.Payload)
	if err != nil {
		log.Error("cron: a claim dead-lettered an occurrence whose payload does not decode; no successor", "err", err)
		return nil
	}
	log = log.With("schedule", env.Name, "scheduled_at", env.ScheduledAt)
	next, err := scheduleNextTx(tr, r.q, env, job.ID)
	var dbErr kv.Error
	switch {
	case err == nil:
		log.Warn("cron: a claim dead-lettered the occurrence (its holders vanished); next one scheduled", "reason", job.Reason, "next", next.At)
	case errors.As(err, &dbErr):
		return err
	default:
		log.Error("cron: a claim dead-lettered the occurrence (its holders vanished); no successor", "err", err)
	}
	return nil
}

type occRunner struct {
	q   *quick.Queue
	h   TxHandler
	log *slog.Logger
}

// finishTimeout bounds the transaction that ends an occurrence. It runs
// under a context detached from the handler's, so a handler that returned
// just as its Timeout struck still commits its completion; a lost lease or
// a killed worker still stops it (the worker checks both).
const finishTimeout = 30 * time.Second

func (r *occRunner) run(ctx context.Context, job *worker.RawJob) error {
	env, err := unmarshalEnvelope(job.Args)
	if err != nil {
		// Without its schedule's name it cannot carry on a chain; keep it
		// in the dead letters for inspection (worker.Cancel would delete
		// it). If even that fails, the error fails the run: retried, and
		// dead-lettered by its last attempt's ack.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		r.log.Error("cron: an occurrence's payload does not decode; dead-lettering it", "id", job.Lease.ID, "err", err)
		return job.DeadLetterWith(fctx, err.Error(), nil)
	}
	occ := Occurrence{Name: env.Name, ScheduledAt: env.ScheduledAt, Payload: env.Payload, Attempt: job.Lease.Attempt, JobID: job.Lease.ID}
	log := r.log.With("schedule", env.Name, "scheduled_at", env.ScheduledAt, "id", job.Lease.ID, "attempt", occ.Attempt)

	if testHookClaimed != nil {
		testHookClaimed()
	}
	st, err := r.definitionState(ctx, env)
	if err != nil {
		return err // retried: the definition could not be read
	}
	if testHookDefinitionRead != nil {
		testHookDefinitionRead(st)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	switch st {
	case defRemoved:
		// The completion still reads the definition, in its own
		// transaction: a Register since the read above (which found this
		// occurrence holding the unique key, so enqueued nothing) gets its
		// next occurrence from here.
		log.Info("cron: schedule removed; completing its occurrence without running it")
		return r.complete(fctx, job, env, nil, log)
	case defChanged:
		log.Info("cron: schedule changed since this occurrence was enqueued; skipping it for the new version's next")
		return r.complete(fctx, job, env, nil, log)
	}

	commit, herr := r.call(ctx, occ)
	var (
		snooze    *worker.SnoozeError
		cancelErr *worker.CancelError
		undec     *undecodableError
	)
	switch {
	case herr == nil:
		return r.complete(fctx, job, env, commit, log)
	case errors.As(herr, &snooze):
		return herr
	case errors.As(herr, &undec):
		// A typed handler's payload that does not decode: no retry can
		// fix it, so dead-letter it at once, as worker.Register does.
		return r.end(fctx, quick.AckDeadLetter, job, env, herr.Error(), herr, log)
	case errors.As(herr, &cancelErr) && !mutant.On("cron.cancel-successor"):
		return r.end(fctx, quick.AckCancel, job, env, cancelErr.Reason, herr, log)
	case job.Lease.MaxAttempts > 0 && job.Lease.Attempt >= job.Lease.MaxAttempts:
		return r.end(fctx, quick.AckDeadLetter, job, env, herr.Error(), herr, log)
	}
	return herr
}

// undecodableError is a typed periodic job's payload that does not decode
// into its args (NewPeriodicJob): the occurrence is dead-lettered at once.
type undecodableError struct{ err error }

func (e *undecodableError) Error() string { return fmt.Sprintf("%v: %v", worker.ErrDecode, e.err) }
func (e *undecodableError) Unwrap() []error {
	return []error{worker.ErrDecode, e.err}
}

// call runs the handler, turning a panic into an error: a panic that
// reached the worker would fail the job there, and on its last attempt
// dead-letter it with no successor.
func (r *occRunner) call(ctx context.Context, occ Occurrence) (commit func(kv.Transaction) error, err error) {
	defer func() {
		if p := recover(); p != nil {
			commit, err = nil, fmt.Errorf("cron: handler panicked: %v", p)
		}
	}()
	return r.h(ctx, occ)
}

// retryEnd is how long an occurrence whose dead-lettering or cancelling
// failed waits before it runs again.
const retryEnd = time.Second

// end ends the occurrence in the dead letters (kind AckDeadLetter) or as
// cancelled (AckCancel) and enqueues its successor in the same transaction
// (DeadLetterWith, CancelWith): however the run ends, the schedule has its
// next run, exactly one.
//
// If that fails, the occurrence must not end any other way: returning the
// handler's error would make the worker fail it (or cancel it, for a
// Cancel), and on the last attempt quick dead-letters it in that ack, with
// no successor. A lost lease returns the loss (the worker acks nothing;
// whoever holds the job now ends it, and a claim that finds it exhausted
// enqueues the successor with onClaimDeadLetter). Any other failure
// snoozes the occurrence briefly, which spends no attempt: it runs again
// and, ending the same way again, carries its successor with it.
func (r *occRunner) end(ctx context.Context, kind quick.AckKind, job *worker.RawJob, env envelope, reason string, herr error, log *slog.Logger) error {
	var err error
	if kind == quick.AckCancel {
		log.Info("cron: the handler cancelled the occurrence; cancelling it and scheduling the next", "reason", reason)
		err = job.CancelWith(ctx, reason, r.successor(env, job.Lease.ID, nil, log))
	} else {
		log.Warn("cron: occurrence failed for good; dead-lettering it and scheduling the next", "err", herr)
		err = job.DeadLetterWith(ctx, reason, r.successor(env, job.Lease.ID, nil, log))
	}
	switch {
	case err == nil:
		return nil
	case quick.IsLeaseLost(err) || errors.Is(err, worker.ErrKilled):
		return errors.Join(herr, err)
	}
	log.Warn("cron: ending the occurrence failed; running it again shortly", "kind", kind, "err", err)
	return worker.Snooze(retryEnd)
}

// retryComplete is how long an occurrence whose completion failed waits
// before it runs again.
const retryComplete = time.Second

// complete ends the occurrence and enqueues its successor in one
// transaction, with the handler's own writes (commit).
//
// If that fails, the occurrence must not end any other way, as in end: returning the error would make the worker fail it, and on its
// last attempt quick would dead-letter it in that ack with no successor
// (the soak's broken one-attempt chain: a 1031 or 1025 striking the
// completion's commit in flight ends the retry loop, since FDB retries
// neither). A lost lease or a killed worker returns the error (the worker
// acks nothing; a completion that did commit is recognised by the worker,
// and a lapsed lease is the next holder's, or the dead-lettering claim's).
// An error of the handler's own writes is the handler failing: retried as
// any failure, and on the last attempt dead-lettered with the successor.
// Any other failure (the database's, or the finishing deadline) snoozes
// the occurrence briefly, which spends no attempt: it runs again, and its
// completion carries the successor. If the completion did commit after
// all, the snooze finds the lease gone and changes nothing.
func (r *occRunner) complete(ctx context.Context, job *worker.RawJob, env envelope, commit func(kv.Transaction) error, log *slog.Logger) error {
	var commitErr error
	own := commit
	if commit != nil {
		own = func(tr kv.Transaction) error {
			commitErr = commit(tr)
			return commitErr
		}
	}
	err := job.CompleteWith(ctx, r.successor(env, job.Lease.ID, own, log))
	var dbErr kv.Error
	switch {
	case err == nil:
		return nil
	case quick.IsLeaseLost(err) || errors.Is(err, worker.ErrKilled):
		return err
	case commitErr != nil && !errors.As(commitErr, &dbErr) && ctx.Err() == nil:
		if job.Lease.MaxAttempts > 0 && job.Lease.Attempt >= job.Lease.MaxAttempts {
			return r.end(ctx, quick.AckDeadLetter, job, env, commitErr.Error(), commitErr, log)
		}
		return commitErr
	}
	log.Warn("cron: completing the occurrence failed; running it again shortly", "err", err)
	return worker.Snooze(retryComplete)
}

// successor is the function that runs inside the transaction ending the
// occurrence: the handler's own writes, then the next occurrence.
func (r *occRunner) successor(env envelope, current quick.ID, commit func(kv.Transaction) error, log *slog.Logger) func(kv.Transaction) error {
	return func(tr kv.Transaction) error {
		if commit != nil {
			if err := commit(tr); err != nil {
				return err
			}
		}
		next, err := scheduleNextTx(tr, r.q, env, current)
		if isBadDefinition(err) {
			// Retrying cannot fix a stored definition; completing the
			// occurrence leaves the schedule visibly stopped (List shows
			// it not alive, with the error) until it is registered again.
			log.Error("cron: the schedule's definition is unusable; no next occurrence", "err", err)
			return nil
		}
		if err == nil && !next.ID.IsZero() {
			log.Debug("cron: next occurrence", "next", next.At, "next_id", next.ID, "duplicate", next.Duplicate)
		}
		return err
	}
}

// Set by tests only, before any worker runs: testHookClaimed runs when an
// occurrence's handler starts, testHookDefinitionRead after it has read its
// definition and before it runs or completes the occurrence. They are where
// a test interleaves a Register or Remove by hand.
var (
	testHookClaimed        func()
	testHookDefinitionRead func(defState)
)

// defState is how an occurrence stands with its schedule's definition.
type defState int

const (
	defCurrent defState = iota // same generation, or unreadable (the completion reports it)
	defRemoved
	defChanged
)

// definitionState reads the schedule's stored definition and compares its
// generation with the occurrence's.
func (r *occRunner) definitionState(ctx context.Context, env envelope) (defState, error) {
	st := defCurrent
	err := r.q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		st = defCurrent
		v, err := tr.Snapshot().Get(defKey(r.q, env.Name)).Get()
		if err != nil {
			return err
		}
		if v == nil {
			st = defRemoved
			return nil
		}
		if d, err := unmarshalDefinition(env.Name, v); err == nil && d.Gen != env.Gen {
			st = defChanged
		}
		return nil
	})
	return st, err
}
