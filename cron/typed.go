package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// Run is one occurrence of a typed periodic job (NewPeriodicJob,
// NewPeriodicJobTx): the
// occurrence, whose Payload is the args' JSON, and the args decoded.
type Run[T quick.JobArgs] struct {
	Occurrence
	Args T
}

// NewPeriodicJob declares a periodic job of typed arguments, as
// worker.Register does for a task type: its schedule's TaskType defaults to
// args.Kind() and its Name to the task type; args are stored, JSON-encoded,
// as the schedule's payload, and each occurrence hands h its decoded copy.
// The args are fixed when the job is declared (River's periodic jobs build
// theirs with a constructor at each insert): an occurrence is enqueued by
// whichever worker completes the one before it, so every process that
// declares the schedule must agree on them, and Periodic's idempotent
// Register stores them once. An occurrence whose payload does not decode
// into T (the schedule was registered with other bytes) is dead-lettered
// at once, with a reason wrapping worker.ErrDecode, and the schedule goes
// on. Errors of the declaration itself (args that do not encode, a
// Schedule.Payload set besides args, a nil handler) are returned by
// Periodic, wrapping ErrInvalidSchedule, with nothing registered.
func NewPeriodicJob[T quick.JobArgs](s Schedule, args T, h func(ctx context.Context, run *Run[T]) error, opts worker.HandlerOptions) PeriodicJob {
	j := declareTyped(s, args, h == nil, opts)
	if j.err != nil {
		return j
	}
	j.Handler = func(ctx context.Context, occ Occurrence) error {
		run, err := decodeRun[T](occ)
		if err != nil {
			return err
		}
		return h(ctx, run)
	}
	return j
}

// NewPeriodicJobTx is NewPeriodicJob for a handler with transactional
// effects, as HandleTx is Handle's: the commit function h returns runs in the
// transaction that completes the occurrence and enqueues its successor, so
// its writes and the schedule's progress commit together or not at all. The
// same defaults, decoding and errors as NewPeriodicJob.
func NewPeriodicJobTx[T quick.JobArgs](s Schedule, args T, h func(ctx context.Context, run *Run[T]) (commit func(tr kv.Transaction) error, err error), opts worker.HandlerOptions) PeriodicJob {
	j := declareTyped(s, args, h == nil, opts)
	if j.err != nil {
		return j
	}
	j.HandlerTx = func(ctx context.Context, occ Occurrence) (func(kv.Transaction) error, error) {
		run, err := decodeRun[T](occ)
		if err != nil {
			return nil, err
		}
		return h(ctx, run)
	}
	return j
}

// declareTyped is the part of NewPeriodicJob and NewPeriodicJobTx that does
// not depend on the handler's form: the defaults from args.Kind(), the args
// as the payload, and the declaration's errors (j.err).
func declareTyped[T quick.JobArgs](s Schedule, args T, nilHandler bool, opts worker.HandlerOptions) PeriodicJob {
	j := PeriodicJob{Schedule: s, Options: opts}
	kind, err := argsKind(args)
	if err != nil {
		j.err = err
		return j
	}
	if j.Schedule.TaskType == "" {
		j.Schedule.TaskType = kind
	}
	if j.Schedule.Name == "" {
		j.Schedule.Name = j.Schedule.TaskType
	}
	payload, err := json.Marshal(args)
	switch {
	case err != nil:
		j.err = fmt.Errorf("%w: periodic job %q: encode its %T args: %w", ErrInvalidSchedule, j.Schedule.Name, args, err)
	case len(s.Payload) > 0 && !bytes.Equal(s.Payload, payload):
		j.err = fmt.Errorf("%w: periodic job %q sets both args and Schedule.Payload (the args are its payload)", ErrInvalidSchedule, j.Schedule.Name)
	case nilHandler:
		j.err = fmt.Errorf("%w: periodic job %q: nil handler", ErrInvalidSchedule, j.Schedule.Name)
	default:
		j.Schedule.Payload = payload
	}
	return j
}

// decodeRun is the occurrence with its args decoded. A payload that does
// not decode returns an undecodableError: retrying cannot fix it, so the
// runner dead-letters the occurrence (its successor is scheduled as after
// any dead letter).
func decodeRun[T quick.JobArgs](occ Occurrence) (*Run[T], error) {
	v, err := quick.DecodeArgs[T](occ.Payload)
	if err != nil {
		return nil, &undecodableError{err: err}
	}
	return &Run[T]{Occurrence: occ, Args: v}, nil
}

// argsKind is args.Kind(), or an error if it panics (a nil pointer).
func argsKind[T quick.JobArgs](args T) (kind string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T.Kind panicked: %v", ErrInvalidSchedule, args, r)
		}
	}()
	return args.Kind(), nil
}
