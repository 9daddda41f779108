package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// HandlerOptions tune the running of one task type.
type HandlerOptions struct {
	// Concurrency is how many of its jobs run at once. Default
	// Config.DefaultConcurrency (10). The worker also
	// holds up to as many more claimed jobs waiting for a slot (prefetch),
	// so that claims overlap the handlers; a stop hands those back at once.
	Concurrency int
	// Lease is the lease each claim takes and each renewal extends to;
	// between quick.MinLease and the queue's MaxLease. Default 30s.
	Lease time.Duration
	// BatchPriority runs claims at FDB's batch priority.
	BatchPriority bool
	// Tag is an FDB throttling tag for claims (at most quick.MaxTagLen bytes).
	Tag string
	// Timeout bounds one run of a handler: its context is cancelled (cause
	// ErrHandlerTimeout) after Timeout on the worker clock, and the job
	// fails. Default none.
	Timeout time.Duration
	// Backoff, when set, is the delay before retrying a job this handler
	// failed on attempt (1 for its first run), over the queue's
	// (quick.Options.Backoff and TaskTypes). Snooze and Cancel are not
	// failures and do not use it.
	Backoff func(attempt int) time.Duration
	// MaxAttempts, when positive, dead-letters a job whose handler fails
	// on its MaxAttempts-th attempt or later, even if the job itself allows
	// more (it can only lower the job's own limit, which quick enforces).
	MaxAttempts int
}

const defaultLease = 30 * time.Second

func (o HandlerOptions) withDefaults(w *Worker) (HandlerOptions, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = w.cfg.DefaultConcurrency
	}
	if o.Lease == 0 {
		o.Lease = defaultLease
	}
	if o.Lease < quick.MinLease || o.Lease > w.q.Options().MaxLease {
		return o, fmt.Errorf("%w: lease %v outside [%v, %v]: %w", ErrInvalidConfig, o.Lease, quick.MinLease, w.q.Options().MaxLease, quick.ErrInvalidLease)
	}
	if len(o.Tag) > quick.MaxTagLen {
		return o, fmt.Errorf("%w: tag %q is over %d bytes: %w", ErrInvalidConfig, o.Tag, quick.MaxTagLen, quick.ErrInvalidOption)
	}
	if o.MaxAttempts < 0 {
		return o, fmt.Errorf("%w: negative MaxAttempts %d", ErrInvalidConfig, o.MaxAttempts)
	}
	if o.Timeout < 0 {
		return o, fmt.Errorf("%w: negative timeout %v", ErrInvalidConfig, o.Timeout)
	}
	return o, nil
}

// Job is a claimed job handed to a handler.
type Job[T any] struct {
	// Args are the job's arguments: the decoded payload for Register, the
	// raw payload for RegisterRaw.
	Args T
	// Lease is the job's lease as claimed, or as the handler's last
	// Checkpoint left it. The worker keeps its own copy current as the
	// lease keeper renews it; use the methods below rather than passing
	// Lease to quick's lease operations, which would race with the keeper.
	Lease quick.Lease

	st *jobState
}

// RawJob is a job whose arguments are its payload bytes.
type RawJob = Job[[]byte]

// Handler runs one job. Return nil to complete it, an error to fail it (it
// is retried after the queue's backoff), Snooze(d) to run it again after d,
// or Cancel(reason) to cancel it (not a dead letter). ctx is cancelled when the lease is
// lost (cause quick.ErrLeaseLost), when the handler outlives its Timeout
// (ErrHandlerTimeout) or Config.ShutdownTimeout on Stop (ErrShutdown), and
// on a simulated crash (ErrKilled); context.Cause tells which.
type Handler[T any] func(ctx context.Context, job *Job[T]) error

// execFunc runs a handler on a job state: decoding, then the call.
type execFunc func(ctx context.Context, st *jobState) error

// Register registers h for the task type T's Kind() names. Payloads are
// JSON-decoded with quick.DecodeArgs; a payload that does not decode
// dead-letters its job (retrying cannot fix it), with a reason wrapping
// ErrDecode. T must be a value type whose zero value answers Kind.
func Register[T quick.JobArgs](w *Worker, h Handler[T], opts HandlerOptions) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidConfig)
	}
	kind, err := kindOf[T]()
	if err != nil {
		return err
	}
	return w.register(kind, opts, func(ctx context.Context, st *jobState) error {
		args, err := quick.DecodeArgs[T](st.first.Payload)
		if err != nil {
			return &decodeError{err: err}
		}
		return h(ctx, &Job[T]{Args: args, Lease: st.first, st: st})
	})
}

func kindOf[T quick.JobArgs]() (kind string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.Kind panicked on the zero value (use a value type): %v", ErrInvalidConfig, *new(T), r)
		}
	}()
	var zero T
	return zero.Kind(), nil
}

// RegisterRaw registers h for taskType, handing it payloads as they are.
func RegisterRaw(w *Worker, taskType string, h Handler[[]byte], opts HandlerOptions) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidConfig)
	}
	return w.register(taskType, opts, func(ctx context.Context, st *jobState) error {
		return h(ctx, &Job[[]byte]{Args: st.first.Payload, Lease: st.first, st: st})
	})
}

// decodeError marks a payload that does not decode: the job is
// dead-lettered, not retried.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return fmt.Sprintf("%v: %v", ErrDecode, e.err) }
func (e *decodeError) Unwrap() []error {
	return []error{ErrDecode, e.err}
}

// Checkpoint stores progress bytes in the job and extends its lease, in one
// transaction (quick.Checkpoint): whoever runs the job next finds them in
// Lease.Checkpoint. A lost lease cancels the handler's context and returns
// an error wrapping quick.ErrLeaseLost.
func (j *Job[T]) Checkpoint(ctx context.Context, state []byte) error {
	l, err := j.st.checkpoint(ctx, state)
	if err != nil {
		return err
	}
	j.Lease = l
	return nil
}

// CompleteWith runs fn and completes the job in one transaction of the
// queue's database, so fn's writes and the completion commit together or
// not at all: an exactly-once effect for work that only writes to FDB. fn
// may run more than once (FDB retries, and a timeout or cancel striking the
// commit in flight is finished in a fresh transaction that still holds the
// lease) and must only use tr. After it
// succeeds the worker does not ack the job again, whatever the handler
// returns. If the lease is gone it returns an error wrapping
// quick.ErrLeaseLost, and fn's writes did not commit, unless
// kv.IsMaybeCommitted(err) also holds: an earlier attempt's commit had an
// unknown result and the queue could not tell whether it applied (a zones
// job whose task type is Untracked cannot be looked up), so fn's writes
// may have committed; make them idempotent, or leave the task type tracked.
func (j *Job[T]) CompleteWith(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return j.st.finishWith(ctx, quick.AckComplete, "", fn)
}

// DeadLetterWith is CompleteWith dead-lettering the job, with reason as its
// last error, instead of completing it.
func (j *Job[T]) DeadLetterWith(ctx context.Context, reason string, fn func(tr kv.Transaction) error) error {
	return j.st.finishWith(ctx, quick.AckDeadLetter, reason, fn)
}

// CancelWith is CompleteWith cancelling the job, with reason, instead of
// completing it: what returning Cancel(reason) does (quick.AckCancel: not
// a dead letter), with fn's writes in the same transaction.
func (j *Job[T]) CancelWith(ctx context.Context, reason string, fn func(tr kv.Transaction) error) error {
	return j.st.finishWith(ctx, quick.AckCancel, reason, fn)
}
