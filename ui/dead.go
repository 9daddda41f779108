package ui

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
)

// deadType is one task type in the dead-letter page's summary.
type deadType struct {
	Type  string
	Count int64
	URL   string
}

type deadData struct {
	Type  string
	Types []string
	// Summary is every task type's dead-letter count (at most
	// maxTypesTracked types), those with some first.
	Summary []deadType
	// Others is how many dead letters the types not shown have.
	Others  int64
	Count   int64
	Jobs    []quick.JobInfo
	Limit   int
	NextURL string
	pausedMark
}

// pausedMark says whether a page's task type is paused (quick.Queue.Pause),
// for the mark every page of one type shows.
type pausedMark struct {
	Paused    bool
	PausedFor string
}

// pausedOf reads whether taskType is paused: quick.Queue.PausedTypes (one
// range read of the paused types).
func (h *Handler) pausedOf(ctx context.Context, taskType string) (pausedMark, error) {
	paused, err := h.q.PausedTypes(ctx)
	if err != nil {
		return pausedMark{}, err
	}
	if at, ok := paused[taskType]; ok {
		return pausedMark{Paused: true, PausedFor: present.Age(h.now().Sub(at))}, nil
	}
	return pausedMark{}, nil
}

// deadPage lists a task type's dead letters, after a summary of every
// type's count: quick.Queue.DeadCount per type (one point read of its
// counter each, at most maxTypesTracked types), then ListDead of the type
// shown (a range read of the dead-letter index and a point read per job
// shown). Without type= it opens on the first type that has dead letters,
// so it never says "none" while another type has some.
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
	asked := qv.Get("type")
	if asked != "" && !slices.Contains(types, asked) {
		h.fail(w, r, http.StatusNotFound, unknownType(asked))
		return
	}
	d := deadData{Type: asked, Types: types, Limit: limit}
	shown, _ := capTypes(slices.Sorted(slices.Values(types)))
	if asked != "" && !slices.Contains(shown, asked) {
		if d.Count, err = h.q.DeadCount(ctx, asked); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
	}
	for _, t := range shown {
		n, err := h.q.DeadCount(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.Summary = append(d.Summary, deadType{Type: t, Count: n, URL: h.cfg.Prefix + "/dead?" + url.Values{"type": {t}}.Encode()})
		if t == asked {
			d.Count = n
		}
	}
	// Those with dead letters first, most first; then the rest by name.
	slices.SortStableFunc(d.Summary, func(a, b deadType) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	if d.Type == "" && len(d.Summary) > 0 {
		d.Type, d.Count = d.Summary[0].Type, d.Summary[0].Count
	}
	for _, s := range d.Summary {
		if s.Type != d.Type {
			d.Others += s.Count
		}
	}
	if d.Type != "" {
		if d.pausedMark, err = h.pausedOf(ctx, d.Type); err != nil {
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
	h.render(w, r, http.StatusOK, "dead", "Dead letters", true, d)
}
