package quicktest

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// Event is how a worked job's run ended.
type Event string

// The events of a run.
const (
	// EventCompleted: the handler returned nil, or completed the job with
	// CompleteWith.
	EventCompleted Event = "completed"
	// EventFailed: the handler returned an error; the job retries after its
	// backoff, or went to the dead letters if its attempts are spent
	// (WorkResult.Job.State is then StateDead).
	EventFailed Event = "failed"
	// EventSnoozed: the handler returned worker.Snooze.
	EventSnoozed Event = "snoozed"
	// EventDeadLettered: the handler's arguments did not decode, it
	// called DeadLetterWith, or it failed its last attempt.
	EventDeadLettered Event = "dead-lettered"
	// EventCancelled: the handler returned worker.Cancel: the job is
	// cancelled, not a dead letter (WorkResult.Job.State is
	// StateCancelled).
	EventCancelled Event = "cancelled"
	// EventLeaseLost: the handler's lease operation found the lease gone
	// (the job was cancelled or taken meanwhile).
	EventLeaseLost Event = "lease-lost"
)

// WorkOpts tune Work and WorkJob; nil uses the defaults.
type WorkOpts struct {
	// Insert holds the insert options of Work's job (priority, delay, item
	// space...), merged over the args type's own defaults as Queue.Insert
	// merges them; nil for none.
	Insert *quick.InsertOpts
	// Handler are the handler's options; Lease (default 30 s) bounds the
	// run, since nothing renews it, and Timeout applies on the worker clock.
	Handler worker.HandlerOptions
	// Holder names the run's lease holder. Default "quicktest".
	Holder string
}

// WorkResult is a run's outcome.
type WorkResult struct {
	Event Event
	// Err is what the handler returned; when the run lost its lease only at
	// its ack (the job was cancelled meanwhile), the handler's nil becomes
	// that loss, a *quick.LeaseLostError.
	Err error
	// Lease is the lease the handler was given.
	Lease quick.Lease
	// Job is the job after the run, as Get tells it: StateCompleted or
	// StateCancelled with its finished record when its task type retains
	// it (quick.TaskTypeOptions.Retain); once it is gone without one,
	// StateCancelled for a cancelled job and StateFinished for a completed
	// one.
	Job quick.JobInfo
	// RunAt is when a failed or snoozed job runs next.
	RunAt time.Time
}

// Work inserts a job of args (with opts.Insert's options) and runs h on it
// synchronously, in the calling goroutine, as a worker would: h gets a
// worker.Job whose Checkpoint, CompleteWith and DeadLetterWith work, and
// its outcome is acked. No worker runs: no claim loop, no lease renewal,
// no background duty. Other jobs of the kind are not touched.
func Work[T quick.JobArgs](ctx context.Context, tb TB, q *quick.Queue, h worker.Handler[T], args T, opts *WorkOpts) *WorkResult {
	tb.Helper()
	if opts == nil {
		opts = &WorkOpts{}
	}
	res, err := q.Insert(ctx, args, opts.Insert)
	if err != nil {
		tb.Fatalf("quicktest: insert %s: %v", args.Kind(), err)
		return nil
	}
	if res.Duplicate {
		tb.Fatalf("quicktest: insert %s: a duplicate of job %s (unique key or ID already held)", args.Kind(), res.ID)
		return nil
	}
	return WorkJob(ctx, tb, q, h, res.ID, opts)
}

// WorkJob runs h synchronously on the existing job id, which must be
// scheduled or ready: it is leased at once whatever its vesting time (a
// claim counts an attempt), run and acked as in Work. opts.Insert is unused.
func WorkJob[T quick.JobArgs](ctx context.Context, tb TB, q *quick.Queue, h worker.Handler[T], id quick.ID, opts *WorkOpts) *WorkResult {
	tb.Helper()
	if opts == nil {
		opts = &WorkOpts{}
	}
	claim, ok1 := testhook.ClaimOne.(func(context.Context, *quick.Queue, quick.ID, string, time.Duration) (quick.Lease, error))
	run, ok2 := testhook.WorkOne.(func(context.Context, *worker.Worker, quick.Lease) (quick.AckKind, quick.AckResult, error, error))
	if !ok1 || !ok2 {
		tb.Fatalf("quicktest: quick or worker does not provide its test hooks (internal/testhook)")
		return nil
	}
	w, err := worker.New(worker.Config{
		Queue: q, ID: holderOf(opts), DisableDuties: true, NoBuiltinDuties: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatalf("quicktest: %v", err)
		return nil
	}
	if err := worker.Register(w, h, opts.Handler); err != nil {
		tb.Fatalf("quicktest: %v", err)
		return nil
	}
	lease := opts.Handler.Lease
	if lease == 0 {
		lease = 30 * time.Second
	}
	l, err := claim(ctx, q, id, holderOf(opts), lease)
	if quick.IsNotFound(err) {
		tb.Fatalf("quicktest: job %s is not pending (finished, or never enqueued): %v", id, err)
		return nil
	}
	if err != nil {
		tb.Fatalf("quicktest: %v", err)
		return nil
	}
	kind, ackRes, herr, err := run(ctx, w, l)
	if err != nil {
		tb.Fatalf("quicktest: work %s %s: %v", l.TaskType, id, err)
		return nil
	}
	out := &WorkResult{Err: herr, Lease: l, RunAt: ackRes.RunAt}
	info, err := q.Get(ctx, id)
	switch {
	case quick.IsNotFound(err) && kind == quick.AckCancel:
		info = quick.JobInfo{ID: id, State: quick.StateCancelled}
	case quick.IsNotFound(err):
		info = quick.JobInfo{ID: id, State: quick.StateFinished}
	case err != nil:
		tb.Fatalf("quicktest: read job %s after its run: %v", id, err)
		return nil
	}
	out.Job = info
	if ackRes.Err != nil {
		out.Event = EventLeaseLost
		if out.Err == nil {
			out.Err = ackRes.Err
		}
		return out
	}
	switch kind {
	case quick.AckComplete:
		out.Event = EventCompleted
	case quick.AckFail:
		out.Event = EventFailed
	case quick.AckSnooze:
		out.Event = EventSnoozed
	case quick.AckDeadLetter:
		out.Event = EventDeadLettered
	case quick.AckCancel:
		out.Event = EventCancelled
	default: // the handler ended the job itself, or lost its lease
		switch {
		case quick.IsLeaseLost(herr):
			out.Event = EventLeaseLost
		case info.State == quick.StateCancelled:
			out.Event = EventCancelled
		case info.State.Done():
			out.Event = EventCompleted
		case info.State == quick.StateDead:
			out.Event = EventDeadLettered
		default:
			out.Event = EventLeaseLost
		}
	}
	return out
}

func holderOf(o *WorkOpts) string {
	if o.Holder != "" {
		return o.Holder
	}
	return "quicktest"
}
