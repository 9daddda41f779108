package quick

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Queue controls: pausing a task type, running a scheduled job now, and
// cancelling or requeueing jobs by filter in bounded batches.
//
// Pausing is a flag the worker runtime reads when it changes, not per
// claim: S(1,"pause",type) holds the time it was paused, and every change
// bumps S(1,"pausev") (an atomic add), on which each worker keeps one kv
// watch. A pause therefore costs nothing per job and nothing per claim; it
// costs each worker one range read of the paused types per change.
// Claim itself does not look at the flag: code that calls Claim directly
// checks Paused itself.

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

// RunNow makes a scheduled job vest now, keeping its attempts, payload and
// checkpoint, and wakes the task type's idle workers. A job that is
// already ready is left as it is (nil error); a leased one, a dead letter
// (see Requeue) or a finished one is an error.
//
// Keys: the lookup's reads (record, schedule key), then clears the old
// schedule key, sets the new one and the record, adds 1 to S(1,"wake",type).
func (q *Queue) RunNow(ctx context.Context, id ID) error {
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		info, key, err := q.lookup(tr.Snapshot(), id)
		if err != nil {
			return err
		}
		switch info.State {
		case StateReady:
			return nil
		case StateScheduled:
		default:
			return fmt.Errorf("%w: %s is %s: only a scheduled job can run now", ErrInvalidOption, id, info.State)
		}
		// Serializable reads: a claim or cancel meanwhile conflicts.
		sv, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		rv, err := tr.Get(q.k.jobKey(id)).Get()
		if err != nil {
			return err
		}
		if sv == nil || rv == nil {
			return fmt.Errorf("%w: %s moved meanwhile", ErrNotFound, id)
		}
		var rec record
		if err := rec.unmarshal(rv); err != nil {
			return fmt.Errorf("quick: job %s: %w", id, err)
		}
		newKey, lane, vestMs := q.k.place(info.TaskType, info.Priority, q.Now(), id, q.lanes)
		tr.Clear(key)
		tr.Set(newKey, sv)
		rec.PlacedAtMs, rec.PlacedLane = vestMs, int64(lane)
		tr.Set(q.k.jobKey(id), rec.marshal())
		tr.Add(q.k.wakeKey(info.TaskType), le64(1))
		return nil
	})
	if err != nil {
		return fmt.Errorf("quick: run %s now: %w", id, err)
	}
	return nil
}

// Filter selects jobs for a bulk action. TaskType is required.
type Filter struct {
	TaskType string
	// State: scheduled, ready or leased; zero means scheduled and ready
	// (a leased job is cancelled only when asked for by name).
	State State
	// ItemSpace, when set, keeps only the jobs of this tenant.
	ItemSpace string
	// Priority, when set, keeps only the jobs of this priority.
	Priority Priority
	// UniqueKeyPrefix, when set, keeps only jobs whose unique key starts
	// with it.
	UniqueKeyPrefix string
}

// DeadFilter selects dead letters for a bulk action. TaskType is required.
type DeadFilter struct {
	TaskType string
	// DiedAfter and DiedBefore bound when the job died (zero: no bound).
	DiedAfter, DiedBefore time.Time
	// ErrorContains keeps dead letters whose last error contains it.
	ErrorContains string
}

// BulkBatch is the most jobs one bulk transaction changes.
const BulkBatch = 100

// CancelMatching cancels the jobs the filter selects, at most limit (0
// means 10,000), and returns how many. It reads a page of up to BulkBatch
// jobs (List), then cancels the page's matches in one transaction, so every
// transaction is bounded whatever the backlog; a job that moved or finished
// between the two is skipped.
func (q *Queue) CancelMatching(ctx context.Context, f Filter, limit int) (int, error) {
	if err := validTaskType(f.TaskType); err != nil {
		return 0, err
	}
	if f.State == StateDead || f.State == StateFinished {
		return 0, fmt.Errorf("%w: CancelMatching selects scheduled, ready or leased jobs; dead letters go with PurgeDead", ErrInvalidOption)
	}
	if limit <= 0 {
		limit = 10_000
	}
	done := 0
	var after []byte
	for done < limit {
		page, err := q.List(ctx, ListOptions{TaskType: f.TaskType, State: f.State, Limit: min(BulkBatch, limit-done), After: after})
		if err != nil {
			return done, fmt.Errorf("quick: cancel matching: %w", err)
		}
		// List reads schedule keys only: the record's fields (tenant,
		// unique key) are checked in the batch, after its lookup.
		var ids []ID
		for _, j := range page.Jobs {
			if f.State != 0 || j.State != StateLeased {
				ids = append(ids, j.ID)
			}
		}
		n, err := q.cancelBatch(ctx, ids, f)
		done += n
		if err != nil {
			return done, err
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	return done, nil
}

func (f Filter) matches(j JobInfo) bool {
	switch {
	case f.State == 0 && j.State == StateLeased:
		return false
	case f.ItemSpace != "" && j.ItemSpace != f.ItemSpace:
		return false
	case f.Priority != 0 && j.Priority != f.Priority:
		return false
	case f.UniqueKeyPrefix != "" && !strings.HasPrefix(j.UniqueKey, f.UniqueKeyPrefix):
		return false
	}
	return true
}

// cancelBatch cancels jobs in one transaction, each looked up again inside
// it (a job that changed so that the filter no longer holds is skipped).
func (q *Queue) cancelBatch(ctx context.Context, ids []ID, f Filter) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n := 0
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		n = 0
		for _, id := range ids {
			info, key, err := q.lookup(tr.Snapshot(), id)
			if IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if info.State == StateFinished || info.State == StateDead || !f.matches(info) || (f.State != 0 && info.State != f.State) {
				continue
			}
			if err := q.cancelTx(tr, info, key); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("quick: cancel matching: %w", err)
	}
	return n, nil
}

// RequeueMatching runs again, now and with attempts reset, the dead letters
// the filter selects, at most limit (0 means 10,000), and returns how many.
// Like CancelMatching it works a page of up to BulkBatch dead letters per
// transaction.
func (q *Queue) RequeueMatching(ctx context.Context, f DeadFilter, limit int) (int, error) {
	if err := validTaskType(f.TaskType); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = 10_000
	}
	done := 0
	var after []byte
	for done < limit {
		page, err := q.ListDead(ctx, f.TaskType, min(BulkBatch, limit-done), after)
		if err != nil {
			return done, fmt.Errorf("quick: requeue matching: %w", err)
		}
		var ids []ID
		for _, j := range page.Jobs {
			if f.matches(j) {
				ids = append(ids, j.ID)
			}
		}
		if len(ids) > 0 {
			n := 0
			err := q.db.Transact(ctx, func(tr kv.Transaction) error {
				n = 0
				for _, id := range ids {
					if err := q.requeueTx(tr, id); err != nil {
						if IsNotFound(err) || errors.Is(err, ErrInvalidOption) {
							continue // requeued, purged or cancelled meanwhile
						}
						return err
					}
					n++
				}
				return nil
			})
			if err != nil {
				return done, fmt.Errorf("quick: requeue matching: %w", err)
			}
			done += n
		}
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	return done, nil
}

func (f DeadFilter) matches(j JobInfo) bool {
	switch {
	case !f.DiedAfter.IsZero() && !j.DeadAt.After(f.DiedAfter):
		return false
	case !f.DiedBefore.IsZero() && !j.DeadAt.Before(f.DiedBefore):
		return false
	case f.ErrorContains != "" && !strings.Contains(j.LastError, f.ErrorContains):
		return false
	}
	return true
}
