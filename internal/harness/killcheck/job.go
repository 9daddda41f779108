package killcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// TaskType is the check's task type.
const TaskType = "killcheck.steps"

// Steps is the check's job: N steps of StepMs milliseconds, checkpointed
// after each.
type Steps struct {
	Seq    int   `json:"seq"`
	N      int   `json:"n"`
	StepMs int64 `json:"step_ms"`
	// HangAt, when positive, makes the job's first attempt block right
	// after it checkpointed step HangAt, until its context ends: the
	// moment the scenario kills its worker.
	HangAt int `json:"hang_at,omitempty"`
}

// Kind names the task type.
func (Steps) Kind() string { return TaskType }

// Done is a job's completion record, written in the transaction that
// completes it.
type Done struct {
	Worker      string `json:"worker"`
	Attempt     int    `json:"attempt"`
	ResumedFrom int    `json:"resumed_from"` // the checkpointed step the run started after
}

// Keys are the app subspace's records (see the package comment).
type Keys struct{ App tuple.Subspace }

// Enq is the key written with a job's insert.
func (k Keys) Enq(id quick.ID) []byte { return k.App.Pack(tuple.Tuple{"enq", id[:]}) }

// Done is the key of a job's completion record.
func (k Keys) Done(id quick.ID) []byte { return k.App.Pack(tuple.Tuple{"done", id[:]}) }

// Count is the key of a job's completion counter.
func (k Keys) Count(id quick.ID) []byte { return k.App.Pack(tuple.Tuple{"count", id[:]}) }

// one is the little-endian 1 FDB's atomic add takes.
var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// Handler runs Steps jobs and reports what it does through emit.
type Handler struct {
	Keys  Keys
	Clock clock.Clock
	// Emit receives the events the scenario follows (one per call,
	// possibly from several goroutines at once).
	Emit func(Event)
	// HangShort makes the first attempt of every job handed out under a
	// short-job lane lease (quick.Lease.Short: no per-job lease, nothing
	// written for it) block before its first step until its context ends:
	// the moment the short-batch scenario kills the worker mid-batch. A
	// run under a per-job lease (a takeover of the dead worker's lane)
	// never blocks.
	HangShort bool
}

// Register registers h's handler on w.
func (h *Handler) Register(w *worker.Worker, opts worker.HandlerOptions) error {
	return worker.Register(w, h.run, opts)
}

func (h *Handler) emit(kind EventKind, job *worker.Job[Steps], step int) {
	if h.Emit != nil {
		h.Emit(Event{Kind: kind, Worker: job.Lease.Holder, Job: job.Lease.ID, Attempt: job.Lease.Attempt, Step: step})
	}
}

// run does the steps left after the job's checkpoint, checkpointing each,
// and completes the job with its completion record in one transaction
// (CompleteWith): the queue's completion keys plus A("done", id) and
// A("count", id).
func (h *Handler) run(ctx context.Context, job *worker.Job[Steps]) error {
	from := 0
	if cp := job.Lease.Checkpoint; len(cp) > 0 {
		n, err := strconv.Atoi(string(cp))
		if err != nil || n < 0 || n > job.Args.N {
			return worker.Cancel(fmt.Sprintf("bad checkpoint %q", cp))
		}
		from = n
	}
	h.emit(EventStart, job, from)
	if h.HangShort && job.Lease.Short() && job.Lease.Attempt == 1 {
		h.emit(EventHang, job, from)
		<-ctx.Done() // until the kill (or a lost lane)
		return context.Cause(ctx)
	}
	for step := from; step < job.Args.N; {
		select {
		case <-h.Clock.After(time.Duration(job.Args.StepMs) * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		step++
		if err := job.Checkpoint(ctx, []byte(strconv.Itoa(step))); err != nil {
			return err
		}
		h.emit(EventCheckpoint, job, step)
		if step == job.Args.HangAt && job.Lease.Attempt == 1 {
			h.emit(EventHang, job, step)
			<-ctx.Done() // until the kill (or a lost lease)
			return context.Cause(ctx)
		}
	}
	rec, err := json.Marshal(Done{Worker: job.Lease.Holder, Attempt: job.Lease.Attempt, ResumedFrom: from})
	if err != nil {
		return err
	}
	id := job.Lease.ID
	err = job.CompleteWith(ctx, func(tr kv.Transaction) error {
		tr.Set(h.Keys.Done(id), rec)
		tr.Add(h.Keys.Count(id), one)
		return nil
	})
	if err != nil {
		return err
	}
	h.emit(EventDone, job, job.Args.N)
	return nil
}

// MaxBatch bounds the jobs one producer transaction inserts.
const MaxBatch = 20

// Produce inserts jobs, each with its "enq" record in the insert's
// transaction, MaxBatch per transaction (each: the queue's insert keys of
// MaxBatch jobs plus their A("enq", id)), and returns their IDs in order.
func Produce(ctx context.Context, q *quick.Queue, keys Keys, jobs []Steps) ([]quick.ID, error) {
	ids := make([]quick.ID, 0, len(jobs))
	for len(jobs) > 0 {
		batch := jobs[:min(MaxBatch, len(jobs))]
		jobs = jobs[len(batch):]
		var got []quick.ID
		err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
			got = got[:0]
			for _, j := range batch {
				res, err := q.InsertTx(tr, j, nil)
				if err != nil {
					return err
				}
				tr.Set(keys.Enq(res.ID), nil)
				got = append(got, res.ID)
			}
			return nil
		})
		if err != nil {
			return ids, fmt.Errorf("killcheck: insert: %w", err)
		}
		ids = append(ids, got...)
	}
	return ids, nil
}
