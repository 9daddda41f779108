package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/quickfdb/quickfdb/quick"
)

type deadData struct {
	Type    string
	Types   []string
	Count   int64
	Jobs    []quick.JobInfo
	Limit   int
	NextURL string
}

// deadPage lists a task type's dead letters: quick.Queue.DeadCount (one
// read) and ListDead (a range read of the dead-letter index and a point
// read per job shown).
func (h *Handler) deadPage(w http.ResponseWriter, r *http.Request) {
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
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d := deadData{Type: typeChoice(qv.Get("type"), types), Types: types, Limit: limit}
	if d.Type != "" {
		if d.Count, err = h.q.DeadCount(ctx, d.Type); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		page, err := h.q.ListDead(ctx, quick.ListDeadOptions{TaskType: d.Type, Limit: limit, After: after})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.Jobs = page.Jobs
		if page.Next != "" {
			v := url.Values{"type": {d.Type}, "limit": {strconv.Itoa(limit)}, "after": {string(page.Next)}}
			d.NextURL = h.cfg.Prefix + "/dead?" + v.Encode()
		}
	}
	h.render(w, r, http.StatusOK, "dead", "Dead letters", false, d)
}
