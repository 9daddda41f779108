package chaos

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// The run's task types, one per job kind.
const (
	TypeLease  = "chaos.lease"  // per-job leases, a short sleep, CompleteWith
	TypeShort  = "chaos.short"  // short-job mode (TaskTypeOptions.ShortJobs), CompleteWith
	TypeCkpt   = "chaos.ckpt"   // per-job leases, Steps steps each checkpointed, CompleteWith
	TypePoison = "chaos.poison" // fails its first attempt, dead-letters itself (DeadLetterWith) on its second: a workload reason
	TypeCron   = "chaos.cron"   // the cron chains' occurrences (cron.HandleTx)
)

// WorkTypes are the task types producers enqueue.
var WorkTypes = []string{TypeLease, TypeShort, TypeCkpt, TypePoison}

// Lanes is each zone's lane count: few, so that four workers share them.
const Lanes = 4

// QueueOptions are the options every process of a run opens the queue
// with: TypeShort in short-job mode; every type keeps its lookup index.
func QueueOptions() quick.Options {
	return quick.Options{
		ZoneLanes: Lanes, MaxZoneLanes: Lanes,
		TaskTypes: map[string]quick.TaskTypeOptions{TypeShort: {ShortJobs: true}},
	}
}

// Spaces are a run's subspaces: the queue's and the app's records.
func Spaces(run tuple.Subspace) (queue tuple.Subspace, keys Keys) {
	return run.Sub("queue"), Keys{App: run.Sub("app")}
}

// Keys are the app records of a run, beside the queue (subspace A):
//
//	A("batch", producer, batch) = packed IDs   written by the producer transaction that inserts the batch
//	A("enq", id)                = JSON Enq      written beside each job in that transaction
//	A("done", id, token, nonce) = JSON Done     written in the transaction that completes (or dead-letters) the job
//	A("count", id)              += 1            same transaction: the CompleteWith effect
//	A("total", shard)           += 1            same transaction: how many jobs finished, for the drain's progress
//
// The nonce of a done record is fresh for every attempt of the
// transaction: if two attempts ever both committed, two records show it.
type Keys struct{ App tuple.Subspace }

// Batch is the key of a producer batch's marker.
func (k Keys) Batch(producer, batch int) []byte {
	return k.App.Pack(tuple.Tuple{"batch", int64(producer), int64(batch)})
}

// Enq is the key written beside a job's insert.
func (k Keys) Enq(id quick.ID) []byte { return k.App.Pack(tuple.Tuple{"enq", id[:]}) }

// Done is the key of a completion record.
func (k Keys) Done(id quick.ID, token uint64, nonce []byte) []byte {
	return k.App.Pack(tuple.Tuple{"done", id[:], int64(token), nonce})
}

// Count is the key of a job's effect counter.
func (k Keys) Count(id quick.ID) []byte { return k.App.Pack(tuple.Tuple{"count", id[:]}) }

// TotalShards spreads the finished-jobs counter over this many keys, so
// that no one key is written on every completion.
const TotalShards = 16

// Total is the key of one shard of the finished-jobs counter.
func (k Keys) Total(shard int) []byte { return k.App.Pack(tuple.Tuple{"total", int64(shard)}) }

// Enq is a job's app record: who enqueued it, and what it is.
type Enq struct {
	Producer int    `json:"p"`
	Batch    int    `json:"b"`
	Index    int    `json:"i"`
	Type     string `json:"t"`
}

// Done is a completion record.
type Done struct {
	Worker  string `json:"w"`
	Attempt int    `json:"a"`
	// At is when the completing transaction's function ran (unix ms): the
	// completion's time, up to the commit's latency.
	At int64 `json:"at"`
	// Dead is set for a job that dead-lettered itself (TypePoison).
	Dead bool `json:"dead,omitempty"`
	// Schedule and ScheduledAt (unix ms) name a cron occurrence.
	Schedule    string `json:"s,omitempty"`
	ScheduledAt int64  `json:"sat,omitempty"`
}

// Payload is a work job's arguments.
type Payload struct {
	Producer int   `json:"p"`
	Batch    int   `json:"b"`
	Index    int   `json:"i"`
	Ms       int64 `json:"ms"`          // how long the run (each step) sleeps
	Steps    int   `json:"n,omitempty"` // TypeCkpt: steps, each checkpointed
}

var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// handlers run the jobs of one worker and report what they do.
type handlers struct {
	id    string
	keys  Keys
	clock clock.Clock
	emit  func(Event)
}

// HandlerOptions are the options of every work type: per-job leases of
// quick.MinLease, two attempts for the poison type, the queue's default
// otherwise.
func handlerOptions(tt string) worker.HandlerOptions {
	o := worker.HandlerOptions{Lease: quick.MinLease}
	if tt == TypePoison {
		o.MaxAttempts = 3
	}
	return o
}

func (h *handlers) register(w *worker.Worker) error {
	for _, tt := range WorkTypes {
		if err := worker.RegisterRaw(w, tt, h.work, handlerOptions(tt)); err != nil {
			return err
		}
	}
	return cron.HandleTx(w, TypeCron, h.cron, worker.HandlerOptions{Lease: quick.MinLease})
}

// work runs a work job: it reports its start (the lease it runs under),
// sleeps (checkpointing each step of a TypeCkpt job), and completes with
// the job's records in the completing transaction (CompleteWith), or, for
// TypePoison, fails once and then dead-letters itself with them.
func (h *handlers) work(ctx context.Context, job *worker.RawJob) (err error) {
	l := job.Lease
	tok := leasetoken.Of(l)
	h.emit(Event{Kind: EvStart, Worker: h.id, Job: l.ID, Token: tok, Attempt: l.Attempt, Short: l.Short(), At: time.Now().UnixNano()})
	defer func() {
		h.emit(Event{Kind: EvEnd, Worker: h.id, Job: l.ID, Token: tok, Attempt: l.Attempt, At: time.Now().UnixNano(), Note: outcome(err)})
	}()
	var p Payload
	if err := json.Unmarshal(job.Args, &p); err != nil {
		return worker.Cancel("bad payload")
	}
	from := 0
	if l.TaskType == TypeCkpt && len(l.Checkpoint) > 0 {
		n, err := strconv.Atoi(string(l.Checkpoint))
		if err != nil || n < 0 || n > p.Steps {
			return worker.Cancel(fmt.Sprintf("bad checkpoint %q", l.Checkpoint))
		}
		from = n
	}
	steps := max(p.Steps, 1)
	for step := from; step < steps; step++ {
		select {
		case <-h.clock.After(time.Duration(p.Ms) * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if l.TaskType == TypeCkpt {
			if err := job.Checkpoint(ctx, []byte(strconv.Itoa(step+1))); err != nil {
				return err
			}
		}
	}
	rec := Done{Worker: h.id, Attempt: l.Attempt}
	write := func(tr kv.Transaction) error {
		rec.At = h.clock.Now().UnixMilli()
		return h.record(tr, l.ID, tok, rec, true)
	}
	if l.TaskType == TypePoison {
		if l.Attempt < 2 {
			return errors.New("poison: fails its first attempt")
		}
		rec.Dead = true
		return job.DeadLetterWith(ctx, "poison: the workload dead-letters it", write)
	}
	return job.CompleteWith(ctx, write)
}

// cron runs an occurrence; its record commits in the transaction that
// completes it and enqueues its successor. cron hides the lease, so the
// attempt stands for the token (each claim counts one more attempt).
func (h *handlers) cron(ctx context.Context, occ cron.Occurrence) (func(kv.Transaction) error, error) {
	tok := uint64(occ.Attempt)
	h.emit(Event{Kind: EvStart, Worker: h.id, Job: occ.JobID, Token: tok, Attempt: occ.Attempt, At: time.Now().UnixNano(), Note: "cron"})
	return func(tr kv.Transaction) error {
		rec := Done{Worker: h.id, Attempt: occ.Attempt, At: h.clock.Now().UnixMilli(), Schedule: occ.Name, ScheduledAt: occ.ScheduledAt.UnixMilli()}
		return h.record(tr, occ.JobID, tok, rec, false)
	}, nil
}

// record writes a job's completion record, its effect counter and, for a
// work job (total), the finished-jobs counter: three mutations at most.
func (h *handlers) record(tr kv.Transaction, id quick.ID, tok uint64, rec Done, total bool) error {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tr.Set(h.keys.Done(id, tok, nonce[:]), v)
	tr.Add(h.keys.Count(id), one)
	if total {
		tr.Add(h.keys.Total(int(binary.BigEndian.Uint16(id[14:]))%TotalShards), one)
	}
	return nil
}

// outcome names how a run ended, for the report of jobs run twice.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case quick.IsLeaseLost(err):
		return "lease-lost"
	case quick.IsLaneLost(err):
		return "lane-lost"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	if c := kv.Code(err); c != 0 {
		return "fdb-" + strconv.Itoa(c)
	}
	if err.Error() == "poison: fails its first attempt" {
		return "poison-fail"
	}
	// Any other error, as one token: the report groups the runs by it.
	msg := strings.Join(strings.Fields(err.Error()), "_")
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return "error:" + msg
}
