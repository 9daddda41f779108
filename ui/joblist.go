package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/quickfdb/quickfdb/quick"
)

// Listing jobs by time. quick.Queue.List walks a task type's lanes in the
// pointer index's order (per priority, the lanes whose next work is oldest
// first) and each lane in vesting order, so one lane's backlog comes out
// before another lane's older jobs. The console wants them by time, and
// bounded: it reads a window of at most timeWindow jobs with one List call
// (within List's budget of 5,000 keys), sorts the window by vesting time,
// and pages through it by offset; past the window it goes on with List's
// cursor to the next window. So a page is in time order within its window:
// exact while the type's live jobs (of the filter) fit in one window, and
// across windows the order is List's.

// timeWindow is the most jobs one listing read takes and sorts.
const timeWindow = 1000

// argsParallel bounds the Gets in flight for a page's args.
const argsParallel = 8

// timePage is one page of a listing in time order.
type timePage struct {
	Jobs []quick.JobInfo
	// After and Skip name the next page: List's cursor of its window and
	// the offset in it. Both empty: the end.
	After string
	Skip  int
	More  bool
	// Window is how many jobs the window held, Cut whether List had more.
	Window int
	Cut    bool
}

// listByTime reads the window at after (List, one call of at most
// timeWindow jobs), keeps those keep accepts (nil: all), sorts them by
// vesting time and returns the page of limit at offset skip.
//
// Keys: one quick.Queue.List call (at most 5,000 keys read).
func (h *Handler) listByTime(ctx context.Context, o quick.ListOptions, skip, limit int, keep func(quick.JobInfo) bool) (timePage, error) {
	o.Limit = timeWindow
	page, err := h.q.List(ctx, o)
	if err != nil {
		return timePage{}, err
	}
	jobs := page.Jobs
	if keep != nil {
		jobs = slices.DeleteFunc(jobs, func(j quick.JobInfo) bool { return !keep(j) })
	}
	slices.SortFunc(jobs, func(a, b quick.JobInfo) int {
		return cmp.Or(a.RunAt.Compare(b.RunAt), slices.Compare(a.ID[:], b.ID[:]))
	})
	tp := timePage{Window: len(jobs), Cut: page.Next != ""}
	skip = min(skip, len(jobs))
	end := min(skip+limit, len(jobs))
	tp.Jobs = jobs[skip:end]
	switch {
	case end < len(jobs):
		tp.After, tp.Skip, tp.More = string(o.After), end, true
	case page.Next != "":
		tp.After, tp.More = string(page.Next), true
	}
	return tp, nil
}

// withArgs fills the payloads of a page's jobs (List reads none):
// quick.Queue.Get per job, at most argsParallel at once. A job gone
// meanwhile keeps no payload.
//
// Keys: per job, Get's two round trips of point reads.
func (h *Handler) withArgs(ctx context.Context, jobs []quick.JobInfo) error {
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, argsParallel)
		mu    sync.Mutex
		first error
	)
	for i := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			j, err := h.q.Get(ctx, jobs[i].ID)
			switch {
			case err == nil:
				jobs[i].Payload = j.Payload
				if jobs[i].LastError == "" {
					jobs[i].LastError = j.LastError
				}
			case !quick.IsNotFound(err):
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("ui: the args of a page: %w", first)
	}
	return nil
}

// parseSkip reads the offset in a listing's window.
func parseSkip(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > timeWindow {
		return 0, fmt.Errorf("invalid skip %q: want 0 to %d", trunc(s, 20), timeWindow)
	}
	return n, nil
}
