package soak

import (
	"context"
	"fmt"
	"hash/fnv"
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

// drain polls until no work job is queued (true) or the queue stalls or
// ctx ends (false).
func drain(ctx context.Context, q *quick.Queue) bool {
	var last uint64
	stalls := 0
	for {
		n, fp, err := queuedFingerprint(ctx, q, workType)
		switch {
		case err != nil:
			// A failed read is not progress, nor a stall of the queue.
		case n == 0:
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

// queuedFingerprint counts a task type's queued jobs and hashes their IDs,
// states and attempts.
func queuedFingerprint(ctx context.Context, q *quick.Queue, tt string) (int, uint64, error) {
	h := fnv.New64a()
	n := 0
	var after quick.Cursor
	for {
		page, err := q.List(ctx, quick.ListOptions{TaskType: tt, Limit: 1000, After: after})
		if err != nil {
			return 0, 0, err
		}
		for _, j := range page.Jobs {
			fmt.Fprintf(h, "%s %v %d;", j.ID, j.State, j.Attempt)
			n++
		}
		if page.Next == "" {
			return n, h.Sum64(), nil
		}
		after = page.Next
	}
}
