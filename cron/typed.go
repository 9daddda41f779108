package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// Run is one occurrence of a typed periodic job (NewPeriodicJob): the
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
		return j
	case len(s.Payload) > 0 && !bytes.Equal(s.Payload, payload):
		j.err = fmt.Errorf("%w: periodic job %q sets both args and Schedule.Payload (the args are its payload)", ErrInvalidSchedule, j.Schedule.Name)
		return j
	case h == nil:
		j.err = fmt.Errorf("%w: periodic job %q: nil handler", ErrInvalidSchedule, j.Schedule.Name)
		return j
	}
	j.Schedule.Payload = payload
	j.Handler = func(ctx context.Context, occ Occurrence) error {
		v, err := quick.DecodeArgs[T](occ.Payload)
		if err != nil {
			// Retrying cannot fix it: dead-letter the occurrence (its
			// successor is scheduled as after any dead letter).
			return worker.Cancel(fmt.Errorf("%w: %w", worker.ErrDecode, err).Error())
		}
		return h(ctx, &Run[T]{Occurrence: occ, Args: v})
	}
	return j
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
