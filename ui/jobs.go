package ui

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
)

// maxPage bounds a listing page.
const maxPage = 500

type jobsFilter struct {
	Type string
	// Tenant filters by item space; NoTenant lists the zone of jobs with
	// none instead. Neither: every tenant.
	Tenant   string
	NoTenant bool
	State    string
	Unique   string
	ID       string
	Limit    int
	After    string
	Skip     int // offset in the window at After (joblist.go)
}

func (f jobsFilter) query(after string, skip int) string {
	v := url.Values{}
	v.Set("type", f.Type)
	if f.Tenant != "" {
		v.Set("tenant", f.Tenant)
	}
	if f.NoTenant {
		v.Set("notenant", "1")
	}
	if f.State != "" {
		v.Set("state", f.State)
	}
	if f.Unique != "" {
		v.Set("unique", f.Unique)
	}
	v.Set("limit", strconv.Itoa(f.Limit))
	if after != "" {
		v.Set("after", after)
	}
	if skip > 0 {
		v.Set("skip", strconv.Itoa(skip))
	}
	return v.Encode()
}

type jobsData struct {
	Filter  jobsFilter
	Types   []string
	States  []string
	Jobs    []quick.JobInfo
	NextURL string
	Note    string
	Total   typeCounts
	Dead    bool
	// Window is how many jobs the page's time-ordered window held, Cut
	// whether the listing went on past it (joblist.go).
	Window int
	Cut    bool
	pausedMark
}

// parseLimit reads a page size: 1 to maxPage, default def.
func parseLimit(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxPage {
		return 0, fmt.Errorf("invalid limit %q: want 1 to %d", s, maxPage)
	}
	return n, nil
}

// parseAfter reads a paging token (the hex of the library's Next key).
// parseAfter takes a listing's cursor from a URL; the listing itself
// checks that it is one of its own (quick.ErrInvalidCursor).
func parseAfter(s string) (quick.Cursor, error) {
	if len(s) > 20_000 {
		return "", fmt.Errorf("invalid paging token %q", trunc(s, 40))
	}
	return quick.Cursor(s), nil
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// jobsPage lists jobs with quick.Queue.List (scheduled, ready, leased; a
// page of at most 5,000 keys read) or ListDead, finds one
// by ID (redirect to its page) or by unique key (quick.Queue.UniqueHolder:
// two point reads).
func (h *Handler) jobsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qv := r.URL.Query()
	f := jobsFilter{Type: qv.Get("type"), State: qv.Get("state"), Unique: qv.Get("unique"), ID: strings.TrimSpace(qv.Get("id")), After: qv.Get("after"),
		Tenant: qv.Get("tenant"), NoTenant: qv.Get("notenant") != ""}
	if f.ID != "" {
		id, err := quick.ParseID(f.ID)
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, err)
			return
		}
		http.Redirect(w, r, h.cfg.Prefix+"/jobs/"+id.String(), http.StatusSeeOther)
		return
	}
	var err error
	if f.Limit, err = parseLimit(qv.Get("limit"), 50); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	after, err := parseAfter(f.After)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if f.Skip, err = parseSkip(qv.Get("skip")); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	var st quick.State
	if f.State != "" {
		if st, err = quick.ParseState(f.State); err != nil {
			h.fail(w, r, http.StatusBadRequest, err)
			return
		}
		if st.Done() {
			h.fail(w, r, http.StatusBadRequest, errors.New("finished jobs are not listed: look one up by ID"))
			return
		}
	}
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	f.Type = typeChoice(f.Type, types)
	d := jobsData{Filter: f, Types: types, States: []string{"scheduled", "ready", "leased", "dead"}, Dead: st == quick.StateDead}
	if f.Type == "" {
		d.Note = "no task types yet: nothing was ever enqueued in this queue"
		h.render(w, r, http.StatusOK, "jobs", "Jobs", false, d)
		return
	}
	if !slices.Contains(types, f.Type) {
		status := http.StatusNotFound
		if len(f.Type) > quick.MaxTaskTypeLen {
			status = http.StatusBadRequest // no task type can be named so
		}
		h.fail(w, r, status, unknownType(f.Type))
		return
	}
	if d.Total, err = h.typeCounts(ctx, f.Type, 1); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	if d.pausedMark, err = h.pausedOf(ctx, f.Type); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	switch {
	case f.Unique != "" && st != quick.StateDead:
		id, err := h.q.UniqueHolder(ctx, f.Type, f.Unique)
		if quick.IsNotFound(err) {
			d.Note = fmt.Sprintf("no pending or running %s job holds unique key %q (a dead letter gives its key up: filter by state dead to search the dead letters)", f.Type, f.Unique)
			break
		}
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		j, err := h.q.Get(ctx, id)
		if err != nil && !quick.IsNotFound(err) {
			h.fail(w, r, statusOf(err), err)
			return
		}
		if err == nil && (st == 0 || j.State == st) {
			d.Jobs = append(d.Jobs, j)
		}
	case st == quick.StateDead:
		page, err := h.q.ListDead(ctx, quick.ListDeadOptions{TaskType: f.Type, Limit: f.Limit, After: after})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		for _, j := range page.Jobs {
			if f.Unique == "" || j.UniqueKey == f.Unique {
				d.Jobs = append(d.Jobs, j)
			}
		}
		if f.Unique != "" {
			d.Note = fmt.Sprintf("dead letters keep no index by unique key: this page of %d dead letters was searched", len(page.Jobs))
		}
		if page.Next != "" {
			d.NextURL = h.cfg.Prefix + "/jobs?" + f.query(string(page.Next), 0)
		}
	default:
		o := quick.ListOptions{TaskType: f.Type, State: st, After: after}
		switch {
		case f.NoTenant:
			o.ItemSpaces = []string{""}
		case f.Tenant != "":
			o.ItemSpaces = []string{f.Tenant}
		}
		page, err := h.listByTime(ctx, o, f.Skip, f.Limit, nil)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		if err := h.withArgs(ctx, page.Jobs); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.Jobs, d.Window, d.Cut = page.Jobs, page.Window, page.Cut
		if page.More {
			d.NextURL = h.cfg.Prefix + "/jobs?" + f.query(page.After, page.Skip)
		}
	}
	h.render(w, r, http.StatusOK, "jobs", "Jobs", true, d)
}

type jobData struct {
	Job         quick.JobInfo
	Payload     string
	PayloadKind string // "json", "text" or "hex"
	Where       string
	ZoneURL     string
	Cancelable  bool
	Requeueable bool
	RunNow      bool
	CronName    string
	pausedMark
}

// maxShownPayload bounds the payload bytes a job page shows.
const maxShownPayload = 16 << 10

// jobPage shows one job: quick.Queue.Get (point reads).
func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) {
	id, err := quick.ParseID(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	j, err := h.q.Get(r.Context(), id)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d := jobData{Job: j}
	d.Payload, d.PayloadKind = showPayload(j.Payload)
	switch j.State {
	case quick.StateScheduled, quick.StateReady, quick.StateLeased:
		at := j.RunAt.UTC().Format("2006-01-02 15:04:05.000Z")
		zone := fmt.Sprintf("lane %d of %s's zone, %s priority", j.Lane, tenantName(j.ItemSpace), j.Priority)
		switch j.State {
		case quick.StateLeased:
			d.Where = fmt.Sprintf("%s; leased until %s (it runs again then, unless its worker renews the lease)", zone, at)
		case quick.StateReady:
			d.Where = fmt.Sprintf("%s; ready since %s: waiting for a worker", zone, at)
		default:
			d.Where = fmt.Sprintf("%s; runs at %s", zone, at)
			if j.Attempt > 0 {
				d.Where = fmt.Sprintf("%s; waiting to retry: its next attempt runs at %s", zone, at)
			}
		}
		d.ZoneURL = h.zoneURL(j.TaskType, j.ItemSpace)
		d.Cancelable = true
		d.RunNow = j.State == quick.StateScheduled
	case quick.StateDead:
		d.Where = "in the dead letters since " + j.DeadAt.UTC().Format("2006-01-02 15:04:05.000Z")
		d.Cancelable, d.Requeueable = true, true
	case quick.StateFinished:
		d.Where = "gone from the queue: completed or cancelled; its enqueue marker is kept for the idempotency window"
	case quick.StateCompleted, quick.StateCancelled:
		d.Where = fmt.Sprintf("finished (%s) at %s; its record is kept until %s (its task type's retention)",
			j.State, j.FinishedAt.UTC().Format("2006-01-02 15:04:05.000Z"), j.ExpiresAt.UTC().Format("2006-01-02 15:04:05.000Z"))
	}
	if name, ok := strings.CutPrefix(j.UniqueKey, "cron:"); ok {
		d.CronName = name
	}
	if j.TaskType != "" {
		if d.pausedMark, err = h.pausedOf(r.Context(), j.TaskType); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
	}
	h.render(w, r, http.StatusOK, "job", "Job "+j.ID.String(), true, d)
}

// showPayload renders a payload as indented JSON, text or a hex dump, at
// most maxShownPayload bytes of it.
func showPayload(b []byte) (string, string) {
	cut := ""
	if len(b) > maxShownPayload {
		cut = fmt.Sprintf("\n… (%d more bytes)", len(b)-maxShownPayload)
		b = b[:maxShownPayload]
	}
	if cut == "" && json.Valid(b) && len(b) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			return buf.String(), "json"
		}
	}
	if present.IsText(b) {
		return string(b) + cut, "text"
	}
	return hex.Dump(b) + cut, "hex"
}
