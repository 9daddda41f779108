package ui

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// The queue controls: pause and resume of a task type, run a scheduled job
// now, cancel by filter and requeue dead letters by filter. Each is one
// library operation (quick/pause.go, quick/runnow.go, quick/bulk.go) whose
// cost docs/design.md states; the confirmation page repeats it.

const (
	costPause = "quick.Queue.Pause / Resume: one transaction, one write (the type's paused mark) and one atomic add (the paused types' version); " +
		"nothing per job, nothing per claim; each running worker then does one range read of the paused types " +
		"(docs/design.md, \"Pausing a task type\")."
	costRunNow = "quick.Queue.RunNow: one transaction; the lookup's point reads, 2 more point reads, a clear, 2 writes and an " +
		"atomic add to the task type's wake key (docs/design.md, \"Bulk actions and run now\")."
	costBulk = "in transactions of at most %d jobs (quick.BulkBatch): a page is listed (%s), then its matches are looked up " +
		"again and changed in one transaction; a job that moved meanwhile is skipped (docs/design.md, \"Bulk actions and run now\")."
)

// controlFor describes the pause, resume, run-now and bulk actions; ok is
// false for another name.
func (h *Handler) controlFor(name string, f url.Values) (spec actionSpec, ok bool, err error) {
	switch name {
	case "pause", "resume":
		t, err := formType(f)
		if err != nil {
			return actionSpec{}, true, err
		}
		what := "Stop every worker of the fleet from claiming " + t + " jobs until it is resumed. Running jobs finish; enqueues go on; jobs wait, ready, in their lanes."
		if name == "resume" {
			what = "Let every worker claim " + t + " jobs again; idle workers take them at once."
		}
		return actionSpec{Title: name + " " + t, What: what, Cost: costPause,
			run: func(ctx context.Context) (string, error) {
				if name == "pause" {
					return "paused " + t, h.q.Pause(ctx, t)
				}
				return "resumed " + t, h.q.Resume(ctx, t)
			}}, true, nil
	case "run-now":
		id, err := formID(f)
		if err != nil {
			return actionSpec{}, true, err
		}
		return actionSpec{Title: "run " + id.String() + " now",
			What: "Make the scheduled job ready now, keeping its attempts, payload and checkpoint, and wake its task type's idle workers.",
			Cost: costRunNow,
			run: func(ctx context.Context) (string, error) {
				return "moved " + id.String() + " to now", h.q.RunNow(ctx, id)
			}}, true, nil
	case "cancel-matching":
		flt, limit, err := cancelFilter(f)
		if err != nil {
			return actionSpec{}, true, err
		}
		what := fmt.Sprintf("Delete up to %d %s %s jobs", limit, describeState(flt.State), flt.TaskType)
		if flt.UniqueKeyPrefix != "" {
			what += fmt.Sprintf(" whose unique key starts with %q", flt.UniqueKeyPrefix)
		}
		if flt.State == quick.StateLeased {
			what += "; the workers running them lose their leases"
		}
		return actionSpec{Title: "cancel " + flt.TaskType + " jobs", What: what + ". This cannot be undone.",
			Cost: "quick.Queue.CancelMatching, " + fmt.Sprintf(costBulk, quick.BulkBatch, "quick.Queue.List: bounded range reads of the schedule keys; then a point read per listed job for its record, 4 or 5 clears per job cancelled"),
			run: func(ctx context.Context) (string, error) {
				// One bounded call per click: a scan cut short by its
				// budget says so, and the next click goes on.
				r, err := h.q.CancelMatching(ctx, flt, quick.BulkOptions{Limit: limit})
				return fmt.Sprintf("cancelled %d %s jobs%s", r.Done, flt.TaskType, moreLeft(r)), err
			}}, true, nil
	case "requeue-dead":
		flt, limit, err := deadFilter(f, h.now())
		if err != nil {
			return actionSpec{}, true, err
		}
		what := fmt.Sprintf("Requeue up to %d of the oldest %s dead letters", limit, flt.TaskType)
		if flt.ErrorContains != "" {
			what += fmt.Sprintf(" whose last error contains %q", flt.ErrorContains)
		}
		if !flt.DiedAfter.IsZero() {
			what += fmt.Sprintf(" that died in the last %v", h.now().Sub(flt.DiedAfter))
		}
		return actionSpec{Title: "requeue " + flt.TaskType + " dead letters", What: what + ", each run now with its attempts reset.",
			Cost: "quick.Queue.RequeueMatching, " + fmt.Sprintf(costBulk, quick.BulkBatch, "quick.Queue.ListDead: a range read of the dead-letter index and a point read per job; then 2 point reads and 4 writes per job requeued"),
			run: func(ctx context.Context) (string, error) {
				r, err := h.q.RequeueMatching(ctx, flt, quick.BulkOptions{Limit: limit})
				return fmt.Sprintf("requeued %d %s dead letters%s", r.Done, flt.TaskType, moreLeft(r)), err
			}}, true, nil
	}
	return actionSpec{}, false, nil
}

// moreLeft tells that a bulk call stopped before the end of its scan.
func moreLeft(r quick.BulkResult) string {
	if r.Next == "" {
		return ""
	}
	return fmt.Sprintf(" (%d keys scanned; more may match: run it again)", r.Scanned)
}

func describeState(s quick.State) string {
	if s == 0 {
		return "scheduled and ready"
	}
	return s.String()
}

// cancelFilter reads the cancel-by-filter form: type, state (scheduled,
// ready, leased; empty: scheduled and ready), unique (a unique key prefix),
// limit.
func cancelFilter(f url.Values) (quick.Filter, int, error) {
	t, err := formType(f)
	if err != nil {
		return quick.Filter{}, 0, err
	}
	flt := quick.Filter{TaskType: t, UniqueKeyPrefix: f.Get("unique")}
	if s := strings.TrimSpace(f.Get("state")); s != "" {
		if flt.State, err = quick.ParseState(s); err != nil {
			return quick.Filter{}, 0, err
		}
		if flt.State != quick.StateScheduled && flt.State != quick.StateReady && flt.State != quick.StateLeased {
			return quick.Filter{}, 0, fmt.Errorf("%w: cancel by filter takes scheduled, ready or leased jobs (dead letters: purge them on the dead-letters page)", quick.ErrInvalidOption)
		}
	}
	limit, err := formInt(f, "limit", 100, 1, maxBulk)
	return flt, limit, err
}

// deadFilter reads the requeue-by-filter form: type, error (a substring of
// the last error), within (died in the last …), limit.
func deadFilter(f url.Values, now time.Time) (quick.DeadFilter, int, error) {
	t, err := formType(f)
	if err != nil {
		return quick.DeadFilter{}, 0, err
	}
	flt := quick.DeadFilter{TaskType: t, ErrorContains: f.Get("error")}
	if s := strings.TrimSpace(f.Get("within")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return quick.DeadFilter{}, 0, fmt.Errorf("%w: within %q: want a positive duration such as 1h", quick.ErrInvalidOption, trunc(s, 20))
		}
		flt.DiedAfter = now.Add(-d)
	}
	limit, err := formInt(f, "limit", 100, 1, maxBulk)
	return flt, limit, err
}
