package quick

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Bulk actions: cancelling or requeueing the jobs a filter selects, in
// transactions of at most BulkBatch jobs (docs/design.md, "Bulk actions and
// run now").

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
	var after Cursor
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
		if page.Next == "" {
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
	var after Cursor
	for done < limit {
		page, err := q.ListDead(ctx, ListDeadOptions{TaskType: f.TaskType, Limit: min(BulkBatch, limit-done), After: after})
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
			now := q.Now()
			err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
				n = 0
				for _, id := range ids {
					if err := q.requeueTx(tr, id, now, maybeCommitted); err != nil {
						if IsNotFound(err) || errors.Is(err, ErrInvalidOption) || errors.Is(err, ErrCorrupt) {
							continue // requeued, purged or cancelled meanwhile; or quarantined
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
		if page.Next == "" {
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
