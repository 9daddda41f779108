package soak

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Cancels of prefetched jobs (issue 22, item 4). A worker claims up to
// twice its slots and holds the jobs it cannot start yet until a slot
// frees; their leases can be lost meanwhile (cancelled, a lane taken
// over, lapsed while the worker was frozen), and a job whose loss the
// worker knows must never start: another worker may run it, or it is gone.
//
// The prefetch type makes such waits long and certain: every worker runs it
// one job at a time, and its hold jobs keep the slot for
// Config.PrefetchHold, past the point where the lease keeper renews the
// waiting job's lease (two thirds of the lease), so a renewal finds a
// cancel while the job still waits. The harness cancels jobs of the type
// that are leased and whose handler has not started: prefetched (or held
// by a killed worker). The checker then requires every cancelled job to
// end with no completion and nothing stored, and the worker's start hook
// (testhooks.StartedLost) counts any handler started for a lease already
// known lost.

// prefetchType is the task type of the hold jobs.
const prefetchType = "soak-prefetch"

// holdProducer is the producer (holdProducerID) of the hold jobs.
const holdProducerID = 90

// produceHolds enqueues hold jobs at Config.PrefetchRate until ctx ends.
func (h *harness) produceHolds(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 400))
	per := time.Duration(float64(time.Second) / h.cfg.PrefetchRate)
	for n := 0; sleep(ctx, per); n++ {
		q, err := h.admin(ctx, false)
		if err != nil {
			continue
		}
		h.enqueueOne(ctx, q, rng, holdProducerID, n, prefetchType, KindHold, 0)
	}
}

// cancelPrefetched looks every CancelEvery for hold jobs that are leased
// but whose handler has not started, and cancels one of them.
func (h *harness) cancelPrefetched(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 401))
	done := map[quick.ID]bool{}
	for sleep(ctx, h.cfg.CancelEvery) {
		q, err := h.admin(ctx, false)
		if err != nil {
			continue
		}
		// The oldest hold jobs neither started nor cancelled (at most 16
		// looked at): claims take the oldest first, so the prefetched
		// ones are among them.
		var cands []quick.ID
		h.rec.mu.Lock()
		for _, j := range h.rec.jobs {
			if len(cands) == 16 {
				break
			}
			if j.Kind == KindHold && !h.rec.started[j.ID] && !done[j.ID] {
				cands = append(cands, j.ID)
			}
		}
		h.rec.mu.Unlock()
		rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		for _, id := range cands {
			info, err := q.Get(ctx, id)
			if err != nil || info.State != quick.StateLeased {
				continue
			}
			done[id] = true
			at := time.Now()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			err = q.Cancel(cctx, id)
			cancel()
			c := CancelRec{ID: id, At: at}
			if err != nil {
				c.Err, c.NotFound = err.Error(), errors.Is(err, quick.ErrNotFound)
			}
			h.rec.cancel(c)
			break
		}
	}
}
