package soak

import (
	"context"
	"time"
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

// drain polls until no work job is queued and none waits dead for its
// requeue (true), or the queue stalls or ctx ends (false).
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
		case n == 0 && !h.requeuePass(ctx):
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
