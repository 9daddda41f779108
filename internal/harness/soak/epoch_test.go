package soak

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// TestClaimEpochIsTheLeasesNotTheHandlerStart is the zones soak's "claimed
// twice at attempt 1" on a requeued short job, by hand. A worker holds a
// claimed job until a handler slot frees (prefetch); one that was frozen
// starts it when it wakes, after its lane lapsed, the takeover counted the
// run and dead-lettered the job, and the harness requeued it and another
// worker ran it. The stale run's claim must be recorded in the epoch its
// lease was claimed in: dated by its handler's start it fell in the
// requeue's epoch, at the same attempt as the requeued run's claim, and the
// checker reported the job duplicated and the requeued run's completion as
// committed under a stale token.
func TestClaimEpochIsTheLeasesNotTheHandlerStart(t *testing.T) {
	ctx := context.Background()
	mem := memkv.Open(memkv.Options{Seed: 1})
	defer mem.Close()
	cfg := ShortZones()
	cfg.UnknownCommitted, cfg.UnknownNotCommitted, cfg.Conflict = 0, 0, 0
	cfg.TimedOutCommitted, cfg.TimedOutNotCommitted, cfg.CancelledCommitted, cfg.CancelledNotCommitted = 0, 0, 0, 0
	cfg.JobMean = 0
	h := newHarness(mem, tuple.FromTuple(tuple.Tuple{"epoch"}), cfg)
	clk := &workerClock{}
	q, err := h.openQueue(ctx, mainDB, clk)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(payload{Kind: KindRequeue})
	var ids []quick.ID
	for range 2 {
		res, err := q.Enqueue(ctx, quick.NewJob{TaskType: shortType, ItemSpace: "t00", Payload: body, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res[0].ID)
	}

	w, err := worker.New(worker.Config{Queue: q, ID: "w1", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	run := h.workHandler("w1", clk)
	first, release := make(chan quick.ID, 1), make(chan struct{})
	var started atomic.Bool
	err = worker.RegisterRaw(w, shortType, func(ctx context.Context, job *worker.RawJob) error {
		if started.CompareAndSwap(false, true) {
			// Holds the only slot: the other job waits, claimed.
			first <- job.Lease.ID
			<-release
			return nil
		}
		return run(ctx, job)
	}, worker.HandlerOptions{Concurrency: 1, Lease: cfg.Lease})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		testhooks.KillWorker(w)
		<-done
	}()

	bound := time.After(30 * time.Second) // a failure bound, not a measurement
	var running quick.ID
	select {
	case running = <-first:
	case <-bound:
		t.Fatal("no handler started")
	}
	waiting := ids[0]
	if waiting == running {
		waiting = ids[1]
	}
	for w.Stats().Claimed < 2 {
		select {
		case <-bound:
			t.Fatalf("the second job was not claimed: %+v", w.Stats())
		case <-time.After(time.Millisecond):
		}
	}
	// The waiting job is dead-lettered and requeued elsewhere meanwhile
	// (as far as the harness can tell: it notes the requeue), and only
	// then does its handler start.
	h.noteRequeue(waiting, time.Now())
	close(release)
	var rec *ClaimRec
	for rec == nil {
		h.rec.mu.Lock()
		for _, c := range h.rec.claims {
			if c.ID == waiting {
				rec = &c
			}
		}
		h.rec.mu.Unlock()
		if rec != nil {
			break
		}
		select {
		case <-bound:
			t.Fatal("the waiting job's handler did not start")
		case <-time.After(time.Millisecond):
		}
	}
	if rec.Epoch != 0 || !rec.Claimed.Before(rec.At) {
		t.Fatalf("a lease claimed before the requeue and started after it: recorded at epoch %d (claimed %v, started %v), want 0",
			rec.Epoch, rec.Claimed, rec.At)
	}
}
