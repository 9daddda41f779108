package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// phase is where a claimed job stands in this worker.
type phase int

const (
	// phaseRunning: the handler runs; the keeper renews the lease.
	phaseRunning phase = iota
	// phaseAcking: the handler returned and its ack is queued.
	phaseAcking
	// phaseDone: acked, or finished by CompleteWith/DeadLetterWith.
	phaseDone
	// phaseLost: the lease is gone; this worker acks nothing.
	phaseLost
	// phaseReleased: a stop handed the job back; the handler's outcome is
	// dropped.
	phaseReleased
)

// jobState is the worker's side of one claimed job. mu serialises every
// operation that moves the lease (renewal, checkpoint, ack, CompleteWith):
// two of them at once would each find the other's move as a lost lease.
type jobState struct {
	r       *runner
	first   quick.Lease // as claimed: what the handler is given
	claimed time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	lease quick.Lease // current: renewals and checkpoints move it
	phase phase
	// lane is the short lane the job was handed out under (short.go):
	// while set, the lane lease is the job's lease and the keeper leaves
	// it alone. A hand-back moves the job to a lease of its own and clears
	// it.
	lane *shortLane

	// For events (events.go): when the handler started and returned (set
	// by runJob before settle, read under mu).
	started, returned time.Time
	// startedLost is why the lease was known lost when the runner decided
	// to start the handler (notStartable; nil if it was not), for
	// testhooks.StartedLost. Written before the handler starts, by the
	// goroutine that runs it.
	startedLost error
	// span is the run's span while open (tracing.go); nil without a
	// TracerProvider.
	span trace.Span
}

// leaveLaneLocked takes the job off its short lane, whose keeper may be
// waiting for it to hand the lane back.
func (st *jobState) leaveLaneLocked() {
	if sl := st.lane; sl != nil {
		st.lane = nil
		sl.removeJob(st)
		st.r.shorts.kick()
	}
}

// usableLocked tells whether the job may still change, and why not.
func (st *jobState) usableLocked() error {
	if st.r.w.killed.Load() {
		return ErrKilled
	}
	switch st.phase {
	case phaseRunning:
		return nil
	case phaseLost:
		return fmt.Errorf("worker: job %s: %w", st.first.ID, quick.ErrLeaseLost)
	}
	return fmt.Errorf("worker: job %s: %w", st.first.ID, ErrJobFinished)
}

// notStartable tells why a claimed job's handler must not start (nil: it
// may): the worker already knows its lease is lost or handed it back, or
// its context ended (the loss's cause). A prefetched job waits for a slot
// while its lease can be lost (issue 22, item 4).
func (st *jobState) notStartable() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	// What the worker knows here, whatever the checks below decide
	// (testhooks.StartedLost: the soak counts starts under a lease known
	// lost, which only a broken check lets through).
	st.startedLost = st.refusalLocked(false)
	if mutant.On("worker.prefetch-phase") {
		return nil
	}
	return st.refusalLocked(mutant.On("worker.start-lapsed"))
}

// refusalLocked is notStartable's answer; ignoreLapsed skips the check of
// a lapsed per-job lease.
func (st *jobState) refusalLocked(ignoreLapsed bool) error {
	if err := st.usableLocked(); err != nil {
		return err
	}
	if cause := context.Cause(st.ctx); cause != nil {
		return cause
	}
	// A per-job lease that ended while the job waited (its worker was
	// frozen, or the keeper could not renew it): another worker may have
	// taken the job, so starting it here could run it twice. It is claimed
	// again as any lapsed lease is. (A job under a short lane follows its
	// lane's lease, which the lane's keeper watches.)
	if st.lane == nil && !st.lease.Deadline.IsZero() && !st.r.w.clk.Now().Before(st.lease.Deadline) && !ignoreLapsed {
		return fmt.Errorf("worker: job %s: its lease ended at %s, before its start: %w", st.first.ID, st.lease.Deadline.UTC().Format(time.RFC3339Nano), quick.ErrLeaseLost)
	}
	return nil
}

// loseLocked records a lost lease: the handler's context is cancelled with
// the loss as its cause, and nothing more is written for the job.
func (st *jobState) loseLocked(err error) {
	if st.phase == phaseLost {
		return
	}
	st.phase = phaseLost
	st.leaveLaneLocked()
	st.r.w.count(st.r, kindLeaseLost, 1)
	var lle *quick.LeaseLostError
	if errors.As(err, &lle) && lle.Reason == "token" {
		st.r.w.count(st.r, kindConflict, 1)
	}
	st.r.w.log.Warn("worker: lease lost; cancelling the handler", "task_type", st.r.taskType, "id", st.first.ID, "err", err)
	st.endSpanLocked("lease_lost", err.Error())
	st.cancel(err)
}

func (st *jobState) checkpoint(ctx context.Context, state []byte) (quick.Lease, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.usableLocked(); err != nil {
		return st.lease, err
	}
	l, err := st.r.w.q.Checkpoint(ctx, st.lease, state, st.r.opts.Lease)
	if err != nil {
		if quick.IsLeaseLost(err) {
			st.loseLocked(err)
		}
		countConflict(st.r, err)
		return st.lease, err
	}
	st.lease = l
	if st.lane != nil && !l.Short() {
		// The checkpoint moved a short job to a lease of its own: the
		// keeper renews it from now on.
		st.leaveLaneLocked()
	}
	return l, nil
}

// finishWith acks the job (complete, dead-letter or cancel) and runs fn in
// one transaction.
func (st *jobState) finishWith(ctx context.Context, kind quick.AckKind, reason string, fn func(kv.Transaction) error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.usableLocked(); err != nil {
		return err
	}
	w := st.r.w
	ack := quick.Ack{Lease: st.lease, Kind: kind, Error: reason}
	var lost error
	// TransactWatched, not one retry loop: FDB retries no 1031 or 1025, so a
	// timeout or cancel that struck the commit in flight would end the run
	// with its outcome unknown and a failure acked after a handler that
	// succeeded. A fresh transaction either still holds the lease (the
	// commit did not apply: finish now) or finds it gone (then reached
	// tells whether this call ended the job).
	err := txn.TransactWatched(ctx, w.q.DB(), func(tr kv.Transaction, _ bool) error {
		lost = nil
		// Ack first: fn then runs only while the lease holds, and sees the
		// job already finished (cron relies on it: completing frees the
		// occurrence's unique key, so fn can enqueue its successor).
		res, err := w.q.AckTx(tr, ack)
		if len(res) == 0 {
			return err
		}
		if res[0].Err != nil {
			// Returning the error aborts the transaction.
			lost = res[0].Err
			return lost
		}
		if res[0].Dead {
			kind = quick.AckDeadLetter
		}
		if fn != nil {
			return fn(tr)
		}
		return nil
	})
	if err != nil && lost != nil && kv.IsMaybeCommitted(err) {
		// An earlier attempt may have committed: then the lease is gone
		// because this very call ended the job. If the job is in the state
		// this call meant to leave it in, it did.
		if st.reached(ctx, kind, reason) {
			err = nil
		}
	}
	if err != nil {
		if lost != nil {
			st.loseLocked(lost)
		}
		countConflict(st.r, err)
		return fmt.Errorf("worker: job %s: %w", st.first.ID, err)
	}
	st.phase = phaseDone
	st.leaveLaneLocked()
	switch kind {
	case quick.AckDeadLetter:
		w.count(st.r, kindDeadLettered, 1)
		st.emit(EventDeadLettered, reason, 0)
		st.endSpanLocked(EventDeadLettered.String(), reason)
	case quick.AckCancel:
		w.count(st.r, kindCancelled, 1)
		st.emit(EventCancelled, reason, 0)
		st.endSpanLocked(EventCancelled.String(), "")
	default:
		w.count(st.r, kindCompleted, 1)
		st.emit(EventCompleted, "", 0)
		st.endSpanLocked(EventCompleted.String(), "")
	}
	return nil
}

// reached tells whether the job is completed (kind complete), cancelled
// (kind cancel) or dead-lettered by this run. A dead letter is this run's only if it was
// written at this run's attempt with this run's reason: if the lease lapsed
// between retries, another worker may have claimed the job (a claim counts
// an attempt) and dead-lettered it, or a claim may have dead-lettered it as
// exhausted (another reason), and that is not this call's outcome. A
// completed job leaves nothing to tell whose completion it was. A zones job
// whose task type is Untracked cannot be looked up at all
// (quick.ErrNotTrackable, which wraps ErrNotFound): that tells nothing, so
// the call keeps its error, the outcome unknown.
func (st *jobState) reached(ctx context.Context, kind quick.AckKind, reason string) bool {
	info, err := st.r.w.q.Get(ctx, st.first.ID)
	if errors.Is(err, quick.ErrNotTrackable) && !st.trackable() {
		// A tracked job has a lookup entry while it lives: not found,
		// it is finished (issue 22: a completion applied then answered
		// 1021 was reported as a lost lease).
		return false
	}
	switch kind {
	case quick.AckComplete:
		return quick.IsNotFound(err) || (err == nil && info.State.Done())
	case quick.AckCancel:
		// Without retention a cancelled job is as gone as a completed
		// one; with it, its record says cancelled.
		return quick.IsNotFound(err) || (err == nil && (info.State == quick.StateFinished || info.State == quick.StateCancelled))
	}
	// The stored error is the reason, possibly truncated.
	return err == nil && info.State == quick.StateDead && info.Attempt == st.first.Attempt &&
		strings.HasPrefix(reason, info.LastError) && (info.LastError != "" || reason == "")
}

// trackable tells whether the job's task type keeps the lookup
// index, so that Get finds it for as long as it lives.
func (st *jobState) trackable() bool {
	if mutant.On("worker.reached-trackable") {
		return false
	}
	return !st.r.w.q.Options().TaskTypes[st.first.TaskType].Untracked
}

// abandon hands a still-running job back at shutdown: its context is
// cancelled and a release queued. It reports whether it released.
func (st *jobState) abandon() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.phase != phaseRunning {
		return false
	}
	st.phase = phaseReleased
	st.cancel(ErrShutdown)
	if st.lane != nil {
		// Handed out under a short lane: its key never moved, so handing
		// the lane back (after the acks are flushed) is its release.
		st.leaveLaneLocked()
		st.r.w.count(st.r, kindReleased, 1)
		st.endSpanLocked("released", "")
		return true
	}
	st.r.w.acker.push(ackReq{st: st, ack: quick.Ack{Lease: st.lease, Kind: quick.AckRelease}})
	return true
}

// settle turns a handler's outcome into an ack, unless the job already
// ended another way.
func (st *jobState) settle(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.r.w.killed.Load() || st.phase != phaseRunning {
		return
	}
	ack, lost := ackFor(st.lease, st.r.opts, err)
	if lost {
		// The handler's own lease operation found the lease gone.
		st.loseLocked(err)
		return
	}
	var dec *decodeError
	if errors.As(err, &dec) {
		st.r.w.log.Warn("worker: dead-lettering a job whose arguments do not decode", "task_type", st.r.taskType, "id", st.first.ID, "err", err)
	}
	st.phase = phaseAcking
	st.r.w.acker.push(ackReq{st: st, ack: ack})
}

// ackFor maps a handler's outcome to the ack that ends its run, under the
// handler's retry policy o; lost is set when the handler's own lease
// operation found the lease gone, and then nothing is acked.
func ackFor(l quick.Lease, o HandlerOptions, err error) (ack quick.Ack, lost bool) {
	var (
		snooze *SnoozeError
		cancel *CancelError
		dec    *decodeError
	)
	ack.Lease = l
	switch {
	case err == nil:
		ack.Kind = quick.AckComplete
	case errors.As(err, &snooze):
		ack.Kind, ack.Delay = quick.AckSnooze, snooze.Delay
	case errors.As(err, &cancel):
		ack.Kind, ack.Error = quick.AckCancel, cancel.Reason
	case errors.As(err, &dec):
		ack.Kind, ack.Error = quick.AckDeadLetter, dec.Error()
	case quick.IsLeaseLost(err):
		return ack, true
	default:
		ack.Kind, ack.Error = quick.AckFail, err.Error()
		if o.MaxAttempts > 0 && l.Attempt >= o.MaxAttempts {
			ack.Kind, ack.Error = quick.AckDeadLetter, fmt.Sprintf("attempt %d of the handler's MaxAttempts %d failed: %v", l.Attempt, o.MaxAttempts, err)
		} else if o.Backoff != nil {
			ack.Delay = max(o.Backoff(l.Attempt), time.Millisecond)
		}
	}
	return ack, false
}

// acked records the outcome of the job's ack, and sends its event.
func (st *jobState) acked(ack quick.Ack, res quick.AckResult, err error) {
	kind := ack.Kind
	st.mu.Lock()
	defer st.mu.Unlock()
	w, r := st.r.w, st.r
	defer st.leaveLaneLocked()
	switch {
	case err != nil:
		w.stats.ackErrors.Add(1)
		countConflict(r, err)
		w.log.Warn("worker: ack failed; the job runs again when its lease lapses", "task_type", r.taskType, "id", st.first.ID, "ack", kind, "err", err)
		st.phase = phaseDone
		st.endSpanLocked("ack_failed", err.Error())
		return
	case res.Err != nil:
		st.loseLocked(res.Err)
		return
	}
	st.phase = phaseDone
	switch kind {
	case quick.AckComplete:
		w.count(r, kindCompleted, 1)
	case quick.AckFail:
		w.count(r, kindFailed, 1)
		if res.Dead {
			w.count(r, kindDeadLettered, 1)
		}
	case quick.AckSnooze:
		w.count(r, kindSnoozed, 1)
	case quick.AckDeadLetter:
		w.count(r, kindDeadLettered, 1)
	case quick.AckCancel:
		w.count(r, kindCancelled, 1)
	case quick.AckRelease:
		w.count(r, kindReleased, 1)
	}
	ev, ok := eventOf(kind, res)
	if ok {
		st.emit(ev, ack.Error, ack.Delay)
	}
	if st.span != nil {
		outcome, errText := "released", ""
		if ok {
			outcome = ev.String()
		}
		if ev == EventFailed || ev == EventDeadLettered {
			errText = ack.Error
			if errText == "" {
				errText = outcome
			}
		}
		st.endSpanLocked(outcome, errText)
	}
}

// countConflict counts an error that reports a lost race with another
// transaction (not_committed).
func countConflict(r *runner, err error) {
	if errors.Is(err, kv.ErrNotCommitted) {
		r.w.count(r, kindConflict, 1)
	}
}
