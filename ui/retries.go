package ui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/quickfdb/quickfdb/quick"
)

// The retries page: jobs waiting for their next attempt, that is scheduled
// jobs that have run before (Attempt > 0), with their last error, soonest
// first. No index keeps them apart (one would cost a write per failure), so
// the page filters a time-ordered window of the type's scheduled jobs
// (joblist.go): at most timeWindow jobs per page read, at most 5,000 keys.

// retriesProbe bounds the task types the page without type= looks through
// for one that has retries.
const retriesProbe = 8

type retriesData struct {
	Type    string
	Types   []string
	Tenant  string
	Jobs    []quick.JobInfo
	Limit   int
	NextURL string
	Window  int
	Cut     bool
	// Probed says the page looked through this many types for retries and
	// found none (without type=).
	Probed int
	pausedMark
}

func isRetry(j quick.JobInfo) bool { return j.State == quick.StateScheduled && j.Attempt > 0 }

// retriesPage lists a task type's retries (listByTime over the scheduled
// jobs, keeping Attempt > 0), with their payloads (withArgs). Without
// type= it shows the first type, by name, whose first window has retries,
// trying at most retriesProbe types.
func (h *Handler) retriesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qv := r.URL.Query()
	limit, err := parseLimit(qv.Get("limit"), 50)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	after, err := parseAfter(qv.Get("after"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	skip, err := parseSkip(qv.Get("skip"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	types = slices.Sorted(slices.Values(types))
	d := retriesData{Type: qv.Get("type"), Types: types, Tenant: qv.Get("tenant"), Limit: limit}
	if d.Type != "" && !slices.Contains(types, d.Type) {
		h.fail(w, r, http.StatusNotFound, unknownType(d.Type))
		return
	}
	o := quick.ListOptions{State: quick.StateScheduled, After: after}
	if d.Tenant != "" {
		o.ItemSpaces = []string{d.Tenant}
	}
	var page timePage
	candidates := []string{d.Type}
	if d.Type == "" {
		candidates = types[:min(len(types), retriesProbe)]
	}
	for _, t := range candidates {
		o.TaskType = t
		if page, err = h.listByTime(ctx, o, skip, limit, isRetry); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		if d.Type != "" || len(page.Jobs) > 0 {
			d.Type = t
			break
		}
		d.Probed++
	}
	if d.Type == "" && len(types) > 0 {
		d.Type = types[0] // none had retries: show the first, empty
	}
	if d.Type != "" {
		if d.pausedMark, err = h.pausedOf(ctx, d.Type); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
	}
	if err := h.withArgs(ctx, page.Jobs); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d.Jobs, d.Window, d.Cut = page.Jobs, page.Window, page.Cut
	if page.More {
		f := jobsFilter{Type: d.Type, Tenant: d.Tenant, Limit: limit}
		d.NextURL = h.cfg.Prefix + "/retries?" + f.query(page.After, page.Skip)
	}
	title := "Retries"
	if d.Type != "" {
		title += " " + d.Type
	}
	h.render(w, r, http.StatusOK, "retries", strings.TrimSpace(title), true, d)
}
