package quick

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// NewJob describes a job to enqueue.
type NewJob struct {
	// ID identifies the job. Leave it zero to have one generated; inside
	// your own transaction, generate it once with NewID outside your retry
	// loop so a retry after commit_unknown_result finds the first attempt's
	// job instead of creating a second.
	ID       ID
	TaskType string
	Payload  []byte
	// Priority defaults to Normal.
	Priority Priority
	// RunAt delays the job until a time; Delay until a duration from now.
	// Set at most one; neither means now.
	RunAt time.Time
	Delay time.Duration
	// ItemSpace names the tenant the job belongs to, for inspection.
	ItemSpace string
	// MaxAttempts bounds the runs of the job before it is dead-lettered;
	// zero means the queue's default.
	MaxAttempts int
	// UniqueKey makes the job unique among the task type's pending and
	// running jobs: while one with this key exists, enqueueing another
	// returns the first.
	UniqueKey string
	// Waitable records the job's outcome when it finishes (completed,
	// dead-lettered or cancelled), for Wait and Outcome, until
	// Options.OutcomeRetention after its creation. It costs one more key
	// written by the transaction that finishes the job; jobs without it pay
	// nothing. Options.WaitableTypes makes every job of a task type waitable.
	Waitable bool
	// Retain overrides its task type's TaskTypeOptions.Retain for this job:
	// positive keeps its finished record that long after it completes or
	// is cancelled (at most MaxRetain), negative keeps none, zero follows
	// the task type. A job with a retention of its own carries it in its
	// key's value (a few bytes).
	Retain time.Duration
	// Trace is the span context stored with the job (25 bytes), which
	// package worker links each run's span to (Lease.Trace). Enqueue and
	// Insert take it from their context when it is unset; EnqueueTx and
	// InsertTx have no context: set it, e.g. to
	// trace.SpanContextFromContext(ctx). A job without a valid span
	// context stores nothing.
	Trace trace.SpanContext
	// NoTrace stores no span context with the job
	// (TaskTypeOptions.NoTrace does it for a whole task type).
	NoTrace bool
}

// Enqueued is the outcome of enqueueing one job.
type Enqueued struct {
	ID ID
	// Duplicate is set when no job was created because the ID was already
	// enqueued (a retried enqueue) or the unique key is held by another
	// pending or running job, whose ID is returned.
	Duplicate bool
	// RunAt is when the new job vests (zero for a duplicate).
	RunAt time.Time
}

// job is a validated NewJob.
type job struct {
	NewJob
	runAt time.Time
	trace []byte // the span context stored (trace.go), nil for none
}

func (q *Queue) prepare(now time.Time, in NewJob) (job, error) {
	j := job{NewJob: in}
	if err := validTaskType(in.TaskType); err != nil {
		return j, err
	}
	if len(in.Payload) > MaxPayloadSize {
		return j, fmt.Errorf("%w: %d bytes, over %d (store large data elsewhere and enqueue its key)", ErrPayloadTooLarge, len(in.Payload), MaxPayloadSize)
	}
	if in.Delay < 0 {
		return j, fmt.Errorf("%w: negative delay %v", ErrInvalidDelay, in.Delay)
	}
	if in.Delay > 0 && !in.RunAt.IsZero() {
		return j, fmt.Errorf("%w: set RunAt or Delay, not both", ErrInvalidDelay)
	}
	p, err := in.Priority.normalize()
	if err != nil {
		return j, err
	}
	j.Priority = p
	if in.MaxAttempts < 0 {
		return j, fmt.Errorf("%w: MaxAttempts %d is negative", ErrInvalidOption, in.MaxAttempts)
	}
	if in.MaxAttempts == 0 {
		j.MaxAttempts = q.opts.MaxAttempts
		if k := q.opts.TaskTypes[in.TaskType].MaxAttempts; k > 0 {
			j.MaxAttempts = k
		}
	}
	if err := checkRetain(in.Retain); err != nil {
		return j, err
	}
	if len(in.UniqueKey) > MaxUniqueKeyLen {
		return j, fmt.Errorf("%w: unique key of %d bytes, over %d", ErrInvalidOption, len(in.UniqueKey), MaxUniqueKeyLen)
	}
	if len(in.ItemSpace) > MaxItemSpaceLen {
		return j, fmt.Errorf("%w: item space of %d bytes, over %d", ErrInvalidOption, len(in.ItemSpace), MaxItemSpaceLen)
	}
	switch {
	case !in.RunAt.IsZero():
		j.runAt = in.RunAt
	default:
		j.runAt = now.Add(in.Delay)
	}
	j.trace = q.storedTrace(in)
	if in.ID.IsZero() {
		j.ID = NewID(now)
	} else if err := q.checkID(now, in.ID); err != nil {
		return j, err
	}
	return j, nil
}

// checkID refuses IDs whose enqueue marker could be purged while a retry may
// still come: the marker lives IdempotencyWindow after the ID's time.
func (q *Queue) checkID(now time.Time, id ID) error {
	if !id.isV7() {
		return fmt.Errorf("%w: %s is not a version 7 UUID (make IDs with quick.NewID)", ErrInvalidID, id)
	}
	if age := now.Sub(id.Time()); age > q.opts.IdempotencyWindow/2 {
		return fmt.Errorf("%w: %s was made %v ago, over half the idempotency window %v (make the ID just before enqueueing)", ErrInvalidID, id, age.Round(time.Second), q.opts.IdempotencyWindow)
	}
	return nil
}
