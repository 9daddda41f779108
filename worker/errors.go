package worker

import (
	"errors"
	"fmt"
	"time"
)

// Errors the worker returns; test them with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every configuration or registration
	// error New and Register return.
	ErrInvalidConfig = errors.New("worker: invalid configuration")
	// ErrStarted is returned by Register after Run, and by a second Run.
	ErrStarted = errors.New("worker: already started")
	// ErrKilled is returned by Run, and by job operations, of a worker
	// killed as a crash would kill it (tests and demos simulate crashes;
	// a production worker never sees it).
	ErrKilled = errors.New("worker: killed")
	// ErrShutdown is the cause of a handler's context when the worker stops
	// and the handler outlived Config.ShutdownTimeout; its job is released.
	ErrShutdown = errors.New("worker: shutting down")
	// ErrHandlerTimeout is the cause of a handler's context when it ran
	// longer than HandlerOptions.Timeout; the job fails (and is retried).
	ErrHandlerTimeout = errors.New("worker: handler timed out")
	// ErrJobFinished is returned by a job operation after the job was
	// completed, dead-lettered or released.
	ErrJobFinished = errors.New("worker: job already finished")
	// ErrPanic is wrapped by the failure a recovered handler panic becomes.
	ErrPanic = errors.New("worker: handler panicked")
	// ErrDecode is wrapped by the reason a job whose payload does not
	// decode into its handler's argument type is dead-lettered with.
	ErrDecode = errors.New("worker: cannot decode job arguments")
	// ErrCorruptDuty is wrapped when a duty record does not decode; the
	// duty then runs as if free and rewrites it.
	ErrCorruptDuty = errors.New("worker: corrupt duty record")
)

// SnoozeError is what Snooze returns: the handler's job runs again after
// Delay without spending an attempt.
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("worker: snooze %v", e.Delay) }

// Snooze returns an error that, returned by a handler, snoozes its job for d
// (quick.AckSnooze): it runs again after d, and the attempt is not counted.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: max(d, 0)} }

// CancelError is what Cancel returns: the handler's job ends at once as
// cancelled (not a dead letter), with Reason as its last error.
type CancelError struct {
	Reason string
}

func (e *CancelError) Error() string { return "worker: cancel: " + e.Reason }

// Cancel returns an error that, returned by a handler, cancels its job now
// (quick.AckCancel) instead of retrying it: the job is deleted, or kept as
// a finished record in state quick.StateCancelled when its retention says
// so (quick.TaskTypeOptions.Retain); a waiter's outcome is
// quick.OutcomeCancelled. To keep a job for a requeue, dead-letter it
// (Job.DeadLetterWith) instead.
func Cancel(reason string) error { return &CancelError{Reason: reason} }
