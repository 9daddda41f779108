package quick

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Pausing a task type is a flag the worker runtime reads when it changes,
// not per claim: S(1,"pause",type) holds the time it was paused, and every
// change bumps S(1,"pausev") (an atomic add), on which each worker keeps
// one kv watch. A pause therefore costs nothing per job and nothing per
// claim; it costs each worker one range read of the paused types per
// change. Claim itself does not look at the flag: code that calls Claim
// directly checks PausedTypes itself.

func (q *Queue) pauseSpace() tuple.Subspace { return q.k.root.Sub("pause") }
func (q *Queue) pauseVersionKey() []byte    { return q.k.root.Pack(tuple.Tuple{"pausev"}) }

// Pause stops the worker runtime from claiming jobs of taskType, queue-wide,
// until Resume. Running jobs finish; enqueues go on. Idempotent.
//
// Keys: sets S(1,"pause",type), adds 1 to S(1,"pausev").
func (q *Queue) Pause(ctx context.Context, taskType string) error {
	return q.setPaused(ctx, taskType, true)
}

// Resume lets workers claim jobs of taskType again. Idempotent.
//
// Keys: clears S(1,"pause",type), adds 1 to S(1,"pausev").
func (q *Queue) Resume(ctx context.Context, taskType string) error {
	return q.setPaused(ctx, taskType, false)
}

func (q *Queue) setPaused(ctx context.Context, taskType string, paused bool) error {
	if err := validTaskType(taskType); err != nil {
		return err
	}
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		key := q.pauseSpace().Pack(tuple.Tuple{taskType})
		if paused {
			tr.Set(key, le64(q.Now().UnixMilli()))
		} else {
			tr.Clear(key)
		}
		tr.Add(q.pauseVersionKey(), le64(1))
		return nil
	})
	if err != nil {
		verb := "resume"
		if paused {
			verb = "pause"
		}
		return fmt.Errorf("quick: %s %s: %w", verb, taskType, err)
	}
	return nil
}

// PausedTypes returns the paused task types and when each was paused.
//
// Cost: one range read of S(1,"pause"), one key per paused type.
func (q *Queue) PausedTypes(ctx context.Context) (map[string]time.Time, error) {
	var out map[string]time.Time
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		out, err = q.pausedTx(tr)
		return err
	})
	return out, err
}

func (q *Queue) pausedTx(tr kv.ReadTransaction) (map[string]time.Time, error) {
	kvs, err := tr.GetRange(rangeOf(q.pauseSpace()), kv.RangeOptions{}).GetSliceWithError()
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, p := range kvs {
		t, err := q.pauseSpace().Unpack(p.Key)
		if err != nil || len(t) != 1 {
			continue // not ours: skip rather than block the workers
		}
		if s, ok := t[0].(string); ok {
			out[s] = time.UnixMilli(readLE64(p.Value))
		}
	}
	return out, nil
}

// WatchPaused returns the paused task types and a watch that fires at the
// next Pause or Resume of any type: the worker runtime's way of following
// pauses without polling. The caller waits on the watch, then calls again.
//
// Cost: one range read of S(1,"pause") and one watch on S(1,"pausev").
func (q *Queue) WatchPaused(ctx context.Context) (map[string]time.Time, kv.Watch, error) {
	var (
		out map[string]time.Time
		w   kv.Watch
	)
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		if w != nil {
			w.Cancel()
		}
		var err error
		if out, err = q.pausedTx(tr); err != nil {
			return err
		}
		w = tr.Watch(q.pauseVersionKey())
		return nil
	})
	if err != nil {
		if w != nil {
			w.Cancel()
		}
		return nil, nil, fmt.Errorf("quick: read paused task types: %w", err)
	}
	return out, w, nil
}

func readLE64(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	var v int64
	for i := range 8 {
		v |= int64(b[i]) << (8 * i)
	}
	return v
}
