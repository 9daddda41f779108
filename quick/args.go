package quick

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/quickfdb/quickfdb/kv"
)

// JobArgs are typed job arguments, in the style of River: a Go value that
// names its task type. Its payload is the value's JSON encoding.
type JobArgs interface {
	// Kind is the task type the job is enqueued under.
	Kind() string
}

// JobArgsWithInsertOpts are typed arguments that declare their kind's
// default insert options. The options a call passes win field by field
// over these (see InsertOpts).
type JobArgsWithInsertOpts interface {
	JobArgs
	InsertOpts() InsertOpts
}

// InsertOpts are the options of a typed insert: everything of a NewJob but
// its task type and payload, which the args give. A zero field means "not
// set": the args type's default (JobArgsWithInsertOpts) applies, then the
// queue's.
type InsertOpts struct {
	// ID identifies the job; see NewJob.ID. Never taken from defaults.
	ID ID
	// Priority defaults to Normal.
	Priority Priority
	// RunAt delays the job until a time; Delay until a duration from now.
	// Set at most one. A call that sets either replaces both defaults.
	RunAt time.Time
	Delay time.Duration
	// ItemSpace names the tenant the job belongs to.
	ItemSpace string
	// MaxAttempts bounds the runs; zero means the default.
	MaxAttempts int
	// UniqueKey makes the job unique among its kind's pending and running
	// jobs; see NewJob.UniqueKey.
	UniqueKey string
	// Waitable records the job's outcome; set in the defaults or the call.
	Waitable bool
	// Trace is the span context stored with the job; see NewJob.Trace.
	// Insert takes it from its context when unset. Never taken from
	// defaults.
	Trace trace.SpanContext
	// Retain overrides the task type's retention; see NewJob.Retain.
	Retain time.Duration
}

// merge lays call over the defaults d: call's set fields win.
func (d InsertOpts) merge(call InsertOpts) InsertOpts {
	out := d
	out.ID = call.ID
	out.Trace = call.Trace
	if call.Priority != 0 {
		out.Priority = call.Priority
	}
	if !call.RunAt.IsZero() || call.Delay != 0 {
		out.RunAt, out.Delay = call.RunAt, call.Delay
	}
	if call.ItemSpace != "" {
		out.ItemSpace = call.ItemSpace
	}
	if call.MaxAttempts != 0 {
		out.MaxAttempts = call.MaxAttempts
	}
	if call.UniqueKey != "" {
		out.UniqueKey = call.UniqueKey
	}
	out.Waitable = d.Waitable || call.Waitable
	if call.Retain != 0 {
		out.Retain = call.Retain
	}
	return out
}

// InsertManyParams is one job of InsertMany: typed args and, optionally,
// their options.
type InsertManyParams struct {
	Args JobArgs
	Opts *InsertOpts
}

// ArgsJob builds the NewJob a typed insert enqueues: the args' kind and JSON
// encoding, with the args type's default options (JobArgsWithInsertOpts)
// under opts, which may be nil.
func ArgsJob(args JobArgs, opts *InsertOpts) (NewJob, error) {
	if args == nil {
		return NewJob{}, fmt.Errorf("%w: nil args", ErrInvalidOption)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return NewJob{}, fmt.Errorf("quick: encode %s args: %w", args.Kind(), err)
	}
	var o InsertOpts
	if d, ok := args.(JobArgsWithInsertOpts); ok {
		o = d.InsertOpts()
	}
	if opts != nil {
		o = o.merge(*opts)
	} else {
		o.ID, o.Trace = ID{}, trace.SpanContext{}
	}
	return NewJob{
		ID: o.ID, TaskType: args.Kind(), Payload: b, Priority: o.Priority,
		RunAt: o.RunAt, Delay: o.Delay, ItemSpace: o.ItemSpace, MaxAttempts: o.MaxAttempts,
		UniqueKey: o.UniqueKey, Waitable: o.Waitable, Retain: o.Retain, Trace: o.Trace,
	}, nil
}

// DecodeArgs decodes a payload made by ArgsJob.
func DecodeArgs[T JobArgs](payload []byte) (T, error) {
	var v T
	if err := json.Unmarshal(payload, &v); err != nil {
		return v, fmt.Errorf("quick: decode %s args: %w", v.Kind(), err)
	}
	return v, nil
}

// Insert enqueues one job of typed arguments in its own transaction. opts
// may be nil.
func (q *Queue) Insert(ctx context.Context, args JobArgs, opts *InsertOpts) (Enqueued, error) {
	res, err := q.InsertMany(ctx, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return Enqueued{}, err
	}
	return res[0], nil
}

// InsertTx enqueues one job of typed arguments inside the caller's
// transaction; see EnqueueTx for IDs and retries. opts may be nil.
func (q *Queue) InsertTx(tr kv.Transaction, args JobArgs, opts *InsertOpts) (Enqueued, error) {
	res, err := q.InsertManyTx(tr, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return Enqueued{}, err
	}
	return res[0], nil
}

// InsertMany enqueues typed jobs in one transaction (Enqueue's limits
// apply); the results are in the order of params.
func (q *Queue) InsertMany(ctx context.Context, params []InsertManyParams) ([]Enqueued, error) {
	jobs, err := argsJobs(params)
	if err != nil {
		return nil, err
	}
	return q.Enqueue(ctx, jobs...)
}

// InsertManyTx is InsertMany inside the caller's transaction; see
// EnqueueTx for IDs and retries.
func (q *Queue) InsertManyTx(tr kv.Transaction, params []InsertManyParams) ([]Enqueued, error) {
	jobs, err := argsJobs(params)
	if err != nil {
		return nil, err
	}
	return q.EnqueueTx(tr, jobs...)
}

func argsJobs(params []InsertManyParams) ([]NewJob, error) {
	jobs := make([]NewJob, len(params))
	for i, p := range params {
		j, err := ArgsJob(p.Args, p.Opts)
		if err != nil {
			return nil, fmt.Errorf("quick: insert %d: %w", i, err)
		}
		jobs[i] = j
	}
	return jobs, nil
}
