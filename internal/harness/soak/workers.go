package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/worker"
)

// soakWorker is one worker process: a worker.Worker on its own queue handle
// (of the main database, or of the mover's away one) and clock, running
// the work and cron handlers.
type soakWorker struct {
	id   string
	w    *worker.Worker
	done chan struct{}
}

func (h *harness) startWorker(ctx context.Context, dbi int, id string, clk *workerClock) (*soakWorker, error) {
	q, err := h.openQueue(ctx, dbi, clk)
	if err != nil {
		return nil, err
	}
	w, err := worker.New(worker.Config{
		Queue: q, ID: id, Clock: clk,
		Logger: h.logger,
		// Short idle sleeps: a lapsed lease writes nothing that could wake
		// an idle worker, and the drain should not wait on a long sleep.
		MaxIdleSleep: time.Second,
	})
	if err != nil {
		return nil, err
	}
	opts := worker.HandlerOptions{Concurrency: h.cfg.Concurrency, Lease: h.cfg.Lease}
	for _, tt := range h.workTypes() {
		o := opts
		if tt == prefetchType {
			// One slot: the second job a worker claims waits for it.
			o.Concurrency = 1
		}
		if err := worker.RegisterRaw(w, tt, h.tracked(h.workHandler(id, clk)), o); err != nil {
			return nil, err
		}
	}
	for _, tt := range cronTypes { // an edit moves a chain between them
		occ, err := cron.RawHandler(q, tt, h.cronHandler(id, clk))
		if err != nil {
			return nil, err
		}
		if err := worker.RegisterRaw(w, tt, h.tracked(occ), opts); err != nil {
			return nil, err
		}
	}
	sw := &soakWorker{id: id, w: w, done: make(chan struct{})}
	go func() {
		defer close(sw.done)
		_ = w.Run(ctx)
	}()
	return sw, nil
}

// Kill stops the worker as a crash would (testhooks.KillWorker): no release, no ack
// flush, no deregistration; its leases lapse.
func (s *soakWorker) Kill() { testhooks.KillWorker(s.w) }

// Wait blocks until the worker's Run has returned.
func (s *soakWorker) Wait() { <-s.done }

// tracked counts a handler's run in h.handlers from its start until it has
// returned: for a cron occurrence, until the transaction that completes it
// and enqueues its successor has committed or failed. Kill does not wait for
// handlers, and a completion begun before a kill still commits (the worker
// checks the kill only before it starts one), so the history is read only
// once every tracked run has returned.
//
// It also counts the handler starts for a lease the worker already knew
// lost (cancelled, taken over, lapsed while the job waited for a slot:
// testhooks.StartedLost): each is a run doubled, and the soak must count
// none (issue 22, item 4).
func (h *harness) tracked(f worker.Handler[[]byte]) worker.Handler[[]byte] {
	return func(ctx context.Context, job *worker.RawJob) error {
		h.handlers.Add(1)
		h.inflight.Add(1)
		defer func() {
			h.inflight.Add(-1)
			h.handlers.Done()
		}()
		if why := testhooks.StartedLost(job); why != nil {
			h.rec.lostStart(fmt.Sprintf("job %s (%s, attempt %d): its handler started for a lease the worker knew lost: %v", job.Lease.ID, job.Lease.TaskType, job.Lease.Attempt, why))
		}
		return f(ctx, job)
	}
}
