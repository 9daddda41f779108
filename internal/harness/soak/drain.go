package soak

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// The drain waits for the work jobs to finish. It has no deadline: a slow
// or loaded machine drains slowly, and that is no failure. It fails when
// the queue stops moving: drainStalls polls in a row (drainPoll apart)
// that see the same queued jobs in the same states and attempts, while a
// lapsed lease, a vested retry or a finished job would each change what
// a poll sees.
const (
	drainPoll   = 200 * time.Millisecond
	drainStalls = 150
)

// drain polls until no work job is queued, none waits dead for its
// requeue and the cron occurrence whose worker vanished has been
// dead-lettered (true), or the queue stalls or ctx ends (false).
func (h *harness) drain(ctx context.Context) bool {
	var last uint64
	stalls := 0
	for {
		queued, fp, err := h.queued(ctx, h.workTypes())
		n := 0
		for _, ids := range queued {
			n += len(ids)
		}
		switch {
		case err != nil:
			// A failed read is not progress, nor a stall of the queue.
		case n == 0 && !h.requeuePass(ctx) && h.vanishedDone(ctx, &stalls):
			// Requeue after counting: a job dead-lettered since the
			// count is found by the pass and the poll goes on.
			return true
		case fp == last:
			stalls++
		default:
			stalls, last = 0, fp
		}
		if stalls >= drainStalls || ctx.Err() != nil {
			return false
		}
		sleep(ctx, drainPoll)
	}
}

// vanishedDone reports whether the cron occurrence whose worker vanished
// mid-run (chain 0's, one attempt) has left the queue: a claim found it
// exhausted and dead-lettered it with its successor, the path every soak
// checks (no cron dead-letters otherwise). Its lease must lapse first, and
// on a loaded machine the work jobs drained before it did (3 runs in 20
// of go test -race -count=20 with both cores busy found no cron
// dead-letter). While its lease has not lapsed, time must pass, which is
// no stall: stalls is reset. Once lapsed, a claim should take it, and the
// polls count towards a stall as usual.
func (h *harness) vanishedDone(ctx context.Context, stalls *int) bool {
	id := h.vanishedOcc.Load()
	if id == nil {
		return true
	}
	q, err := h.admin(ctx, false)
	if err != nil {
		return false
	}
	info, err := q.Get(ctx, *id)
	switch {
	case quick.IsNotFound(err):
		return true
	case err != nil:
		return false
	case info.State == quick.StateLeased:
		*stalls = 0
		return false
	}
	return info.State != quick.StateScheduled && info.State != quick.StateReady
}
