package cron

import (
	"context"
	"fmt"
	"slices"

	"github.com/quickfdb/quickfdb/worker"
)

// PeriodicJob is a recurring job declared on a worker, River's PeriodicJob
// on quickfdb's chains: its schedule and its handler in one value (built
// with NewPeriodicJob for a handler of typed args), so a
// service declares its recurring work where it builds its worker and
// nothing else has to remember to register schedules or run a repairer.
type PeriodicJob struct {
	// Schedule is stored with Register. Its TaskType defaults to its Name.
	Schedule Schedule
	// Handler runs each occurrence (as Handle); exactly one of Handler and
	// HandlerTx is set.
	Handler func(ctx context.Context, occ Occurrence) error
	// HandlerTx runs each occurrence with a transactional effect (as
	// HandleTx).
	HandlerTx TxHandler
	// Options are the handler's options (concurrency, lease, timeout).
	Options worker.HandlerOptions

	// err is what NewPeriodicJob found wrong with a typed declaration;
	// Periodic returns it.
	err error
}

// Periodic declares periodic jobs on w, before w.Run: it registers each
// job's handler for its schedule's task type (with the cron-repair duty,
// which the workers share, one of them every 5 minutes), then stores each
// schedule with Register. Call it in every process that runs these jobs,
// with the same declarations: Register is idempotent, so an unchanged
// schedule writes nothing however many processes start, and the chain (one
// pending occurrence per schedule) is shared by all of them.
//
// Everything is checked before anything is written: a job without exactly
// one handler, two jobs on one task type (a task type has one handler), or
// a schedule that does not validate returns an error wrapping
// ErrInvalidSchedule or ErrInvalidSpec, with nothing registered.
//
// The schedule is stored when Periodic is called, not on every pass: a
// changed declaration takes effect when a process with it starts (Register
// replaces the stored schedule; a rolling deploy so ends with the new
// definition). Removing a job from the declarations does not remove its
// schedule, since another binary may still declare it: use Remove (or
// `quick cron remove`), and its pending occurrence is cancelled.
//
// Why not worker.Config: worker does not import cron (cron builds on
// worker), and a schedule needs cron's handler to chain its occurrences.
func Periodic(ctx context.Context, w *worker.Worker, jobs ...PeriodicJob) error {
	q := w.Queue()
	now := q.Now()
	jobs = slices.Clone(jobs)   // defaults are filled in; the caller's slice stays as it was
	seen := map[string]string{} // task type -> schedule name
	for i := range jobs {
		j := &jobs[i]
		if j.err != nil {
			return j.err
		}
		if j.Schedule.TaskType == "" {
			j.Schedule.TaskType = j.Schedule.Name
		}
		name := j.Schedule.Name
		if (j.Handler == nil) == (j.HandlerTx == nil) {
			return fmt.Errorf("%w: periodic job %q needs exactly one of Handler and HandlerTx", ErrInvalidSchedule, name)
		}
		if other, ok := seen[j.Schedule.TaskType]; ok {
			return fmt.Errorf("%w: periodic jobs %q and %q share task type %q (a task type has one handler)", ErrInvalidSchedule, other, name, j.Schedule.TaskType)
		}
		seen[j.Schedule.TaskType] = name
		if _, _, err := validate(j.Schedule, now); err != nil {
			return fmt.Errorf("periodic job %q: %w", name, err)
		}
	}
	for _, j := range jobs {
		var err error
		if j.HandlerTx != nil {
			err = HandleTx(w, j.Schedule.TaskType, j.HandlerTx, j.Options)
		} else {
			err = Handle(w, j.Schedule.TaskType, j.Handler, j.Options)
		}
		if err != nil {
			return fmt.Errorf("periodic job %q: %w", j.Schedule.Name, err)
		}
	}
	for _, j := range jobs {
		if err := Register(ctx, q, j.Schedule); err != nil {
			return fmt.Errorf("periodic job %q: %w", j.Schedule.Name, err)
		}
	}
	return nil
}
