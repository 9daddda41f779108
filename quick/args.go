package quick

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// JobArgs are typed job arguments, in the style of River: a Go value that
// names its task type. Its payload is the value's JSON encoding.
type JobArgs interface {
	// Kind is the task type the job is enqueued under.
	Kind() string
}

// ArgsJob builds a NewJob from typed arguments; opts supplies everything
// but TaskType and Payload (its ID, delay, priority, unique key...).
func ArgsJob(args JobArgs, opts NewJob) (NewJob, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return NewJob{}, fmt.Errorf("quick: encode %s args: %w", args.Kind(), err)
	}
	opts.TaskType = args.Kind()
	opts.Payload = b
	return opts, nil
}

// DecodeArgs decodes a payload made by ArgsJob.
func DecodeArgs[T JobArgs](payload []byte) (T, error) {
	var v T
	if err := json.Unmarshal(payload, &v); err != nil {
		return v, fmt.Errorf("quick: decode %s args: %w", v.Kind(), err)
	}
	return v, nil
}

// Insert enqueues one job of typed arguments in its own transaction.
func (q *Queue) Insert(ctx context.Context, args JobArgs, opts NewJob) (Enqueued, error) {
	j, err := ArgsJob(args, opts)
	if err != nil {
		return Enqueued{}, err
	}
	res, err := q.Enqueue(ctx, j)
	if err != nil {
		return Enqueued{}, err
	}
	return res[0], nil
}

// InsertTx enqueues one job of typed arguments inside the caller's
// transaction; see EnqueueTx for IDs and retries.
func (q *Queue) InsertTx(tr kv.Transaction, args JobArgs, opts NewJob) (Enqueued, error) {
	j, err := ArgsJob(args, opts)
	if err != nil {
		return Enqueued{}, err
	}
	res, err := q.EnqueueTx(tr, j)
	if err != nil {
		return Enqueued{}, err
	}
	return res[0], nil
}
