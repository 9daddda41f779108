package soak

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// payload is a work job's description of itself.
type payload struct {
	Kind     string `json:"k"`
	Producer int    `json:"p,omitempty"`
	Seq      int    `json:"n,omitempty"`
	Pad      string `json:"x,omitempty"` // makes a large job large
}

// completion is the value of a history record.
type completion struct {
	Worker      string    `json:"w"`
	Attempt     int       `json:"a"`
	Schedule    string    `json:"s,omitempty"`
	ScheduledAt time.Time `json:"at,omitzero"`
}

// workHandler runs the work jobs. Normal jobs, and transient ones after
// their first attempt, complete through Job.CompleteWith with a history
// record written in the completing transaction; poison jobs always fail.
func (h *harness) workHandler(wid string, clk *workerClock) worker.Handler[[]byte] {
	return func(ctx context.Context, job *worker.RawJob) (err error) {
		l := job.Lease
		// The lease's epoch is the one it was claimed in, not the one its
		// handler starts in: a worker holds claimed jobs until a slot frees,
		// and a frozen one starts them when it wakes, perhaps after their
		// lane lapsed, the takeover counted their run and dead-lettered
		// them, and the harness requeued them. Dated at the start, such a
		// stale run looked like a second claim of the requeued job at the
		// same attempt, and made the requeued run's completion look stale.
		claimed := testhooks.ClaimedAt(job).Add(-clk.offset)
		epoch := h.epochAt(l.ID, claimed)
		var p payload
		perr := json.Unmarshal(job.Args, &p)
		h.rec.claim(ClaimRec{ID: l.ID, Token: leasetoken.Of(l), Attempt: l.Attempt, Worker: wid, Epoch: epoch, Claimed: claimed, At: time.Now(), Short: isShort(l),
			Producer: p.Producer, Seq: p.Seq})
		start := time.Now()
		var done time.Time // when the work ended, before the completing transaction
		defer func() {
			r := RunRec{ID: l.ID, Token: leasetoken.Of(l), Worker: wid, Start: start, End: time.Now(), Claimed: claimed, Done: done}
			if err != nil {
				r.Err = err.Error()
				r.LeaseLost = quick.IsLeaseLost(err)
			}
			h.rec.run(r)
		}()
		if perr != nil {
			return worker.Cancel("bad payload")
		}
		if p.Kind == KindExhaust {
			// The only attempt is spent with nobody left to end it.
			h.vanish(wid, clk)
		}
		if err := h.work(ctx, clk); err != nil {
			return err
		}
		switch p.Kind {
		case KindPoison:
			return h.failure(p.Kind + " failure")
		case KindTransient:
			if l.Attempt == 1 {
				return h.failure(p.Kind + " failure")
			}
		case KindRequeue:
			if epoch == 0 {
				return h.failure("failing until requeued")
			}
		case KindHold:
			select {
			case <-clk.After(h.cfg.PrefetchHold):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		case KindSlow:
			select {
			case <-clk.After(h.cfg.SlowFor):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		case KindCheckpoint:
			want := "ckpt:" + l.ID.String()
			if len(l.Checkpoint) == 0 {
				if err := job.Checkpoint(ctx, []byte(want)); err != nil {
					return err
				}
				return h.failure("checkpointed; failing once")
			}
			if string(l.Checkpoint) != want {
				h.rec.problem(fmt.Sprintf("job %s (checkpoint) resumed from checkpoint %q, stored %q", l.ID, l.Checkpoint, want))
			}
		}
		done = time.Now()
		return job.CompleteWith(ctx, func(tr kv.Transaction) error {
			h.record(tr, l.ID, leasetoken.Of(l), completion{Worker: wid, Attempt: l.Attempt})
			return nil
		})
	}
}

// cronHandler runs the cron occurrences through package cron, which
// completes each and enqueues its successor in one transaction; the history
// record rides in that transaction too. cron hides the lease, so the
// attempt number stands for the token: each claim of a job counts one more
// attempt, so it names the claim as uniquely.
func (h *harness) cronHandler(wid string, clk *workerClock) cron.TxHandler {
	return func(ctx context.Context, occ cron.Occurrence) (func(kv.Transaction) error, error) {
		tok := uint64(occ.Attempt)
		h.rec.claim(ClaimRec{ID: occ.JobID, Token: tok, Attempt: occ.Attempt, Worker: wid})
		start := time.Now()
		defer func() {
			h.rec.run(RunRec{ID: occ.JobID, Token: tok, Worker: wid, Start: start, End: time.Now(), Schedule: occ.Name})
		}()
		if occ.Name == chainSchedule(h.cfg, 0).Name && h.chaos.Load() && h.cronVanished.CompareAndSwap(false, true) {
			// Chain 0 has one attempt per occurrence: the claim that finds
			// this one exhausted must enqueue its successor.
			id := occ.JobID
			h.vanishedOcc.Store(&id)
			h.vanish(wid, clk)
		}
		if err := h.work(ctx, clk); err != nil {
			return nil, err
		}
		return func(tr kv.Transaction) error {
			if h.onCronCommit != nil {
				h.onCronCommit()
			}
			h.record(tr, occ.JobID, tok, completion{Worker: wid, Attempt: occ.Attempt, Schedule: occ.Name, ScheduledAt: occ.ScheduledAt})
			return nil
		}, nil
	}
}

// work is a handler's body: now and then it pauses its whole worker past
// the lease, then it sleeps its duration on the worker's clock.
func (h *harness) work(ctx context.Context, clk *workerClock) error {
	if h.shouldPause() {
		clk.Pause(h.cfg.pause())
	}
	select {
	case <-clk.After(h.jobDuration()):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// record writes a history record keyed by (job, token, nonce). The nonce is
// fresh for every attempt of the transaction, so if two attempts ever both
// committed, two records would show it.
func (h *harness) record(tr kv.Transaction, id quick.ID, token uint64, c completion) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	v, _ := json.Marshal(c)
	tr.Set(h.histKey(id, token, nonce[:]), v)
}

// isShort says whether a lease is a short-job hand-out.
func isShort(l quick.Lease) bool { return l.Short() }
