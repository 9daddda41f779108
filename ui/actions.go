package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/quick"
)

// Actions are POSTs to /actions/{name}. Each asks first: without
// confirm=yes the handler renders a confirmation page saying what will
// happen and what it costs, whose button posts again with confirm=yes.
// Cross-origin POSTs are refused (http.CrossOriginProtection: the
// browser's Sec-Fetch-Site and Origin headers), and with ReadOnly every
// action is refused with 403.

// maxBulk bounds the jobs one bulk action touches.
const maxBulk = 1000

// actionSpec describes an action for its confirmation page.
type actionSpec struct {
	Title string
	What  string
	Cost  string
	run   func(ctx context.Context) (string, error)
}

type confirmData struct {
	Action string
	Spec   actionSpec
	Fields []field
	Back   string
}

type field struct{ Name, Value string }

func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	if h.cfg.ReadOnly {
		h.fail(w, r, http.StatusForbidden, errors.New("the console is read-only: actions are turned off"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("read the form: %w", err))
		return
	}
	name := r.PathValue("action")
	spec, err := h.actionFor(r.Context(), name, r.PostForm)
	if err != nil {
		h.fail(w, r, statusOfControl(err), err)
		return
	}
	back := safeBack(r.PostForm.Get("back"))
	if r.PostForm.Get("confirm") != "yes" {
		d := confirmData{Action: name, Spec: spec, Back: back}
		for k, vs := range r.PostForm {
			if k == "confirm" || k == "back" {
				continue
			}
			for _, v := range vs {
				d.Fields = append(d.Fields, field{k, v})
			}
		}
		h.render(w, r, http.StatusOK, "confirm", "Confirm: "+spec.Title, false, d)
		return
	}
	msg, err := spec.run(r.Context())
	v := url.Values{}
	if err != nil {
		h.log.Warn("ui: action failed", "action", name, "err", err)
		if statusOfControl(err) < 500 || errors.Is(err, errUnavailable) {
			v.Set("failed", err.Error())
		} else {
			h.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	} else {
		h.log.Info("ui: action", "action", name, "result", msg)
		v.Set("done", msg)
	}
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	http.Redirect(w, r, h.cfg.Prefix+back+sep+v.Encode(), http.StatusSeeOther)
}

// safeBack keeps a redirect inside the console.
func safeBack(s string) string {
	if s == "" || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.Contains(s, "\\") || strings.ContainsAny(s, "\r\n") {
		return "/"
	}
	// Drop an earlier flash message.
	if u, err := url.Parse(s); err == nil {
		q := u.Query()
		q.Del("done")
		q.Del("failed")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return "/"
}

func formID(f url.Values) (quick.ID, error) {
	s := strings.TrimSpace(f.Get("id"))
	if s == "" {
		return quick.ID{}, fmt.Errorf("%w: no job ID given", quick.ErrInvalidID)
	}
	return quick.ParseID(s)
}

func formType(f url.Values) (string, error) {
	t := f.Get("type")
	if t == "" || len(t) > quick.MaxTaskTypeLen {
		return "", fmt.Errorf("%w: %q", quick.ErrInvalidTaskType, trunc(t, 40))
	}
	return t, nil
}

func formInt(f url.Values, name string, def, lo, hi int) (int, error) {
	s := strings.TrimSpace(f.Get(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s %q: want %d to %d", quick.ErrInvalidOption, name, trunc(s, 20), lo, hi)
	}
	return n, nil
}

// actionFor validates an action's input and describes it; nothing runs.
func (h *Handler) actionFor(ctx context.Context, name string, f url.Values) (actionSpec, error) {
	switch name {
	case "requeue":
		id, err := formID(f)
		if err != nil {
			return actionSpec{}, err
		}
		return actionSpec{Title: "requeue " + id.String(),
			What: "Take the job out of the dead letters and run it now with its attempts reset (payload and checkpoint kept; its unique key is not taken back).",
			Cost: "quick.Queue.Requeue: one transaction; 2 point reads (the record, the checkpoint flag), 4 writes.",
			run: func(ctx context.Context) (string, error) {
				return "requeued " + id.String(), h.q.Requeue(ctx, id)
			}}, nil
	case "cancel":
		id, err := formID(f)
		if err != nil {
			return actionSpec{}, err
		}
		return actionSpec{Title: "cancel " + id.String(),
			What: "Delete the job (scheduled, ready or leased), or purge it from the dead letters. A worker running it loses its lease. This cannot be undone.",
			Cost: "quick.Queue.Cancel: one transaction; point reads of the record, marker and placed key (a lease that moved costs a range read per lane), then 4 or 5 clears.",
			run: func(ctx context.Context) (string, error) {
				return "cancelled " + id.String(), h.q.Cancel(ctx, id)
			}}, nil
	case "requeue-dead":
		t, err := formType(f)
		if err != nil {
			return actionSpec{}, err
		}
		limit, err := formInt(f, "limit", 100, 1, maxBulk)
		if err != nil {
			return actionSpec{}, err
		}
		contains := f.Get("error")
		what := fmt.Sprintf("Requeue up to %d of the oldest %s dead letters", limit, t)
		if contains != "" {
			what += fmt.Sprintf(" whose last error contains %q", contains)
		}
		return actionSpec{Title: "requeue " + t + " dead letters", What: what + ", each run now with its attempts reset.",
			Cost: fmt.Sprintf("quick.Queue.ListDead pages (a range read of 100 keys and a point read per job) and one quick.Queue.Requeue transaction per job; at most %d jobs scanned.", maxBulkScan),
			run: func(ctx context.Context) (string, error) {
				n, err := h.requeueByFilter(ctx, t, contains, limit)
				return fmt.Sprintf("requeued %d %s dead letters", n, t), err
			}}, nil
	case "purge-dead":
		t, err := formType(f)
		if err != nil {
			return actionSpec{}, err
		}
		older := time.Duration(0)
		if s := strings.TrimSpace(f.Get("older")); s != "" {
			if older, err = time.ParseDuration(s); err != nil || older < 0 {
				return actionSpec{}, fmt.Errorf("%w: older %q: want a duration such as 24h, or 0 for all", quick.ErrInvalidOption, trunc(s, 20))
			}
		}
		keep, err := formInt(f, "keep", 0, 0, 1_000_000_000)
		if err != nil {
			return actionSpec{}, err
		}
		limit, err := formInt(f, "limit", 10_000, 1, 1_000_000)
		if err != nil {
			return actionSpec{}, err
		}
		ret, what := purgeRetention(older, keep)
		return actionSpec{Title: "purge " + t + " dead letters",
			What: fmt.Sprintf("Delete %s %s dead letters, at most %d. This cannot be undone.", what, t, limit),
			Cost: "quick.Queue.PurgeDead: transactions of at most 500 dead letters each, reading only the oldest end of the dead-letter index (a counter read, a range read, 3 clears per job).",
			run: func(ctx context.Context) (string, error) {
				n, err := h.q.PurgeDead(ctx, t, ret, limit)
				return fmt.Sprintf("purged %d %s dead letters", n, t), err
			}}, nil
	case "cron-repair":
		return actionSpec{Title: "repair cron chains",
			What: "Restart every schedule chain that has no pending or running occurrence, at its next time after now (missed times are skipped).",
			Cost: "cron.Repair: a snapshot read of the definitions (one range read plus a point read per schedule), and one transaction per broken chain.",
			run: func(ctx context.Context) (string, error) {
				n, err := cron.Repair(ctx, h.q)
				return fmt.Sprintf("restored %d broken chains", n), err
			}}, nil
	case "pause", "resume":
		t, err := formType(f)
		if err != nil {
			return actionSpec{}, err
		}
		if !pauseAvailable {
			return actionSpec{}, fmt.Errorf("%s %s: %w", name, t, errUnavailable)
		}
		return actionSpec{Title: name + " " + t, What: name + " claiming of " + t + " jobs by every worker.",
			Cost: "one write (see the library's pause operation).",
			run: func(ctx context.Context) (string, error) {
				return name + "d " + t, h.setPaused(ctx, t, name == "pause")
			}}, nil
	case "run-now":
		id, err := formID(f)
		if err != nil {
			return actionSpec{}, err
		}
		if !runNowAvailable {
			return actionSpec{}, fmt.Errorf("run %s now: %w", id, errUnavailable)
		}
		return actionSpec{Title: "run " + id.String() + " now", What: "Make the scheduled job vest now.",
			Cost: "one transaction (see the library's run-now operation).",
			run: func(ctx context.Context) (string, error) {
				return "moved " + id.String() + " to now", h.runNow(ctx, id)
			}}, nil
	}
	return actionSpec{}, fmt.Errorf("%w: unknown action %q", errNoAction, trunc(name, 40))
}

var errNoAction = errors.New("no such action")

// purgeRetention turns the purge form into a quick.Retention: dead letters
// older than `older`, and the oldest beyond the newest `keep`; with neither,
// all of them.
func purgeRetention(older time.Duration, keep int) (quick.Retention, string) {
	switch {
	case older > 0 && keep > 0:
		return quick.Retention{MaxAge: older, MaxCount: keep}, fmt.Sprintf("the dead letters older than %v and all but the newest %d", older, keep)
	case older > 0:
		return quick.Retention{MaxAge: older}, fmt.Sprintf("the dead letters older than %v of the", older)
	case keep > 0:
		return quick.Retention{MaxCount: keep}, fmt.Sprintf("all but the newest %d", keep)
	}
	return quick.Retention{MaxAge: time.Nanosecond}, "all the"
}

// maxBulkScan bounds the dead letters a bulk requeue reads.
const maxBulkScan = 10 * maxBulk

// requeueDeadPaged requeues up to limit dead letters whose last error
// contains errContains, reading at most maxBulkScan of them.
func requeueDeadPaged(ctx context.Context, q *quick.Queue, taskType, errContains string, limit int) (int, error) {
	n, scanned := 0, 0
	var after quick.Cursor
	for n < limit && scanned < maxBulkScan {
		page, err := q.ListDead(ctx, quick.ListDeadOptions{TaskType: taskType, Limit: 100, After: after})
		if err != nil {
			return n, err
		}
		for _, j := range page.Jobs {
			if n == limit {
				break
			}
			if errContains != "" && !strings.Contains(j.LastError, errContains) {
				continue
			}
			if err := q.Requeue(ctx, j.ID); err != nil {
				if quick.IsNotFound(err) || errors.Is(err, quick.ErrInvalidOption) {
					continue // gone or requeued meanwhile
				}
				return n, err
			}
			n++
		}
		scanned += len(page.Jobs)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	return n, nil
}
