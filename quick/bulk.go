package quick

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// ItemSpaces, when set, keeps only the jobs of these tenants
	// ([]string{""}: the jobs enqueued without an ItemSpace); nil keeps
	// every tenant's.
	ItemSpaces []string
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

// BulkOptions bound one call of a bulk action: a call reads at most
// ScanBudget keys and acts on at most Limit jobs, then returns a cursor to
// go on, so that no call does work proportional to the backlog.
type BulkOptions struct {
	// Limit is the most jobs acted on; default 1,000.
	Limit int
	// ScanBudget is the most keys read looking for matches; default
	// 5,000 (as List's), at least 16.
	ScanBudget int
	// After resumes a scan: pass the previous result's Next (with the same
	// filter).
	After Cursor
}

// BulkResult is what one call of a bulk action did.
type BulkResult struct {
	// Done is how many jobs were acted on.
	Done int
	// Scanned is how many keys were read looking for them.
	Scanned int
	// Next resumes the scan; empty when the scan reached the end.
	Next Cursor
}

// BulkBatch is the most jobs one bulk transaction changes.
const BulkBatch = 100

const defaultBulkLimit = 1000

func (o BulkOptions) withDefaults() BulkOptions {
	if o.Limit <= 0 {
		o.Limit = defaultBulkLimit
	}
	if o.ScanBudget <= 0 {
		o.ScanBudget = defaultListBudget
	}
	o.ScanBudget = max(o.ScanBudget, minListBudget)
	return o
}

// CancelMatching cancels the live jobs the filter selects, within one
// call's bounds (BulkOptions), and says how many and where to go on. It
// lists a page of up to BulkBatch jobs (List, within what is left of the
// scan budget), then cancels the page's matches in one transaction, each
// job's key read again inside it (a job that moved, finished or changed so
// that the filter no longer holds is skipped); so every transaction is
// bounded whatever the backlog. Jobs of an Untracked task type are
// cancelled too: the listing says where their keys are.
//
// Keys: List's reads; then per job cancelled a read of its job key
// (serializable), read-conflict keys on it and S (2, "i", id), clears of
// it, S (2, "i", id), its blobs and unique key, and its outcome when
// Waitable.
func (q *Queue) CancelMatching(ctx context.Context, f Filter, o BulkOptions) (BulkResult, error) {
	if err := validTaskType(f.TaskType); err != nil {
		return BulkResult{}, err
	}
	if f.State == StateDead || f.State.Done() {
		return BulkResult{}, fmt.Errorf("%w: CancelMatching selects scheduled, ready or leased jobs; dead letters go with PurgeDead", ErrInvalidOption)
	}
	o = o.withDefaults()
	res := BulkResult{Next: o.After}
	for res.Done < o.Limit && o.ScanBudget-res.Scanned >= minListBudget {
		page, used, err := q.list(ctx, ListOptions{
			TaskType: f.TaskType, ItemSpaces: f.ItemSpaces, State: f.State,
			Limit: min(BulkBatch, o.Limit-res.Done), After: res.Next, ScanBudget: o.ScanBudget - res.Scanned,
		})
		if err != nil {
			return res, fmt.Errorf("quick: cancel matching: %w", err)
		}
		res.Scanned += used
		var jobs []JobInfo
		for _, j := range page.Jobs {
			if f.matches(j) {
				jobs = append(jobs, j)
			}
		}
		n, err := q.cancelBatch(ctx, jobs, f)
		res.Done += n
		if err != nil {
			return res, err
		}
		res.Next = page.Next
		if page.Next == "" {
			break
		}
	}
	return res, nil
}

func (f Filter) matches(j JobInfo) bool {
	switch {
	case f.State == 0 && j.State == StateLeased:
		return false
	case f.State != 0 && j.State != f.State:
		return false
	case f.ItemSpaces != nil && !slices.Contains(f.ItemSpaces, j.ItemSpace):
		return false
	case f.Priority != 0 && j.Priority != f.Priority:
		return false
	case f.UniqueKeyPrefix != "" && !strings.HasPrefix(j.UniqueKey, f.UniqueKeyPrefix):
		return false
	}
	return true
}

// cancelBatch cancels listed jobs in one transaction, each job key read
// again inside it: one that is gone (claimed, moved, finished) or changed
// so that the filter no longer holds is skipped.
func (q *Queue) cancelBatch(ctx context.Context, jobs []JobInfo, f Filter) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	n := 0
	err := q.db.Transact(ctx, func(tr kv.Transaction) error {
		n = 0
		nowMs := q.Now().UnixMilli()
		keys := make([][]byte, len(jobs))
		reads := make([]kv.Future[[]byte], len(jobs))
		for i, j := range jobs {
			keys[i] = j.zl.key(j.ID)
			reads[i] = tr.Get(keys[i])
		}
		for i, j := range jobs {
			v, err := reads[i].Get()
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			var zv zjobValue
			if zv.unmarshal(v) != nil {
				continue // a claim that meets it quarantines it
			}
			r := *j.zl
			r.v = zv
			info := zinfo(r.lane, zjobKey{Priority: r.lane.prio, Lane: r.lane.lane, VestMs: r.vestMs, ID: j.ID}, &zv, nil, nowMs)
			info.zl = &r
			if !f.matches(info) {
				continue
			}
			if err := q.cancelZoneTx(tr, info, keys[i]); err != nil {
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
// the filter selects, within one call's bounds (BulkOptions), and says how
// many and where to go on. Like CancelMatching it works a page of up to
// BulkBatch dead letters per transaction; each dead letter listed costs two
// keys of the scan budget (its index entry and its record).
//
// Keys: ListDead's reads; then per job requeued Requeue's.
func (q *Queue) RequeueMatching(ctx context.Context, f DeadFilter, o BulkOptions) (BulkResult, error) {
	if err := validTaskType(f.TaskType); err != nil {
		return BulkResult{}, err
	}
	o = o.withDefaults()
	res := BulkResult{Next: o.After}
	for res.Done < o.Limit {
		limit := min(BulkBatch, o.Limit-res.Done, (o.ScanBudget-res.Scanned)/2)
		if limit <= 0 {
			break
		}
		page, err := q.ListDead(ctx, ListDeadOptions{TaskType: f.TaskType, Limit: limit, After: res.Next})
		if err != nil {
			return res, fmt.Errorf("quick: requeue matching: %w", err)
		}
		res.Scanned += 2 * len(page.Jobs)
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
				return res, fmt.Errorf("quick: requeue matching: %w", err)
			}
			res.Done += n
		}
		res.Next = page.Next
		if page.Next == "" {
			break
		}
	}
	return res, nil
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
