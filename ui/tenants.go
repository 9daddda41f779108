package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// The tenants page and a zone's page. A tenant's jobs of one task type are
// its zone, a queue of its own spread over hash lanes (docs/design.md, "Two
// levels"); a tenant with no item space has the no-tenant zone.
//
// The tenants page shows, per task type, the tenants with the most ready
// work, each counted across its zone (quick.Queue.Depth, at most Budget
// keys per type; no depth count per tenant is kept: it would cost a write
// per job), with its start rate as the workers count it (two point reads
// per tenant shown, worker.ReadTenantStarts). A zone's page shows its lanes as a heat strip (quick.Queue.ZoneInfo,
// about 10,000 keys in all, whatever the backlog).

// Tenants shown per task type: on the page of every type, and of one.
const (
	tenantsTopAll = 10
	tenantsTopOne = 50
)

type tenantRow struct {
	ItemSpace                string
	Ready, Leased, Scheduled int
	Exact                    bool
	OldestAge                string
	Lanes                    int // lanes holding jobs
	ZoneURL                  string
	// Limit is the tenant's limits, running against its concurrency limit
	// ("-" without limits; quick.TenantDepth.Limits, Running).
	Limit string
	// Starts is the jobs it started a second over the last minute, as the
	// workers count them (worker.ReadTenantStarts).
	Starts string
}

type tenantsSection struct {
	Total   typeCounts
	Tenants []tenantRow
	// More says the budget ended before every tenant was counted.
	More bool
	pausedMark
}

type tenantsData struct {
	Types    []string
	Type     string // the one asked for; "" shows every type
	Sections []tenantsSection
	Cut      int
	Top      int
	Budget   int
}

// zoneURL is the page of a tenant's zone of a task type.
func (h *Handler) zoneURL(taskType, tenant string) string {
	v := url.Values{}
	v.Set("type", taskType)
	v.Set("tenant", tenant)
	return h.cfg.Prefix + "/zone?" + v.Encode()
}

// jobsURL is the jobs page of a tenant's zone of a task type.
func (h *Handler) jobsURL(taskType, tenant string) string {
	v := url.Values{"type": {taskType}}
	if tenant == "" {
		v.Set("notenant", "1")
	} else {
		v.Set("tenant", tenant)
	}
	return h.cfg.Prefix + "/jobs?" + v.Encode()
}

// tenantsPage: per task type (or the one asked for), typeCounts with its
// top tenants.
func (h *Handler) tenantsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	all, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d := tenantsData{Types: all, Type: r.URL.Query().Get("type"), Top: tenantsTopAll, Budget: h.cfg.Budget}
	types := all
	if d.Type != "" {
		if !slices.Contains(all, d.Type) {
			h.fail(w, r, http.StatusNotFound, unknownType(d.Type))
			return
		}
		types, d.Top = []string{d.Type}, tenantsTopOne
	}
	types, d.Cut = capTypes(types)
	now := h.now()
	paused, err := h.q.PausedTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	for _, t := range types {
		c, err := h.typeCounts(ctx, t, d.Top)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		s := tenantsSection{Total: c, More: !c.TenantsExact}
		if at, ok := paused[t]; ok {
			s.pausedMark = pausedMark{Paused: true, PausedFor: present.Age(now.Sub(at))}
		}
		names := make([]string, len(c.Tenants))
		for i, td := range c.Tenants {
			names[i] = td.ItemSpace
		}
		// Two point reads per tenant shown (worker/tenantstarts.go).
		starts, err := worker.ReadTenantStarts(ctx, h.q, t, names)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		for _, td := range c.Tenants {
			row := tenantRow{Starts: strconv.FormatFloat(starts[td.ItemSpace].PerSecond, 'f', 2, 64),
				ItemSpace: td.ItemSpace, Ready: td.Ready, Leased: td.Leased, Scheduled: td.Scheduled,
				Exact: td.Exact, OldestAge: "-", Lanes: td.Lanes, ZoneURL: h.zoneURL(t, td.ItemSpace), Limit: limitCell(td)}
			if !td.OldestReady.IsZero() {
				row.OldestAge = present.Age(now.Sub(td.OldestReady))
			}
			s.Tenants = append(s.Tenants, row)
		}
		d.Sections = append(d.Sections, s)
	}
	h.render(w, r, http.StatusOK, "tenants", "Tenants", true, d)
}

// laneCell is one lane of a zone's heat strip, its priorities summed.
type laneCell struct {
	Lane                     int
	Ready, Leased, Scheduled int
	Exact                    bool
	Level                    int // 0 (empty) to 8 (the busiest lane)
	OldestAge                string
	Holder                   string // the worker taking the lane's jobs now
	// Beyond says the lane is past the zone's count: it drains what it
	// holds and takes no new job.
	Beyond bool
}

type zoneData struct {
	Types     []string
	Type      string
	Tenant    string
	Lanes     int // lanes new jobs are spread over
	Cells     []laneCell
	States    []quick.ZoneLaneInfo
	Total     laneCell
	Peak      int
	Cap       int
	TenantURL string
	pausedMark
}

// zonePage: one zone's meta and lane states, each lane's keys counted
// (quick.Queue.ZoneInfo).
func (h *Handler) zonePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	qv := r.URL.Query()
	d := zoneData{Types: types, Type: typeChoice(qv.Get("type"), types), Tenant: qv.Get("tenant")}
	if d.Type == "" {
		h.render(w, r, http.StatusOK, "zone", "Zone", true, d)
		return
	}
	info, err := h.q.ZoneInfo(ctx, d.Type, d.Tenant)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	if !slices.Contains(types, d.Type) {
		h.fail(w, r, http.StatusNotFound, unknownType(d.Type))
		return
	}
	if d.pausedMark, err = h.pausedOf(ctx, d.Type); err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d.Lanes, d.States, d.Cap = info.Lanes, info.LaneStates, info.Cap
	d.TenantURL = h.jobsURL(d.Type, d.Tenant)
	n := info.Lanes
	for _, l := range info.LaneStates {
		n = max(n, l.Lane+1)
	}
	now := h.now()
	cells := make([]laneCell, n)
	oldest := make([]time.Time, n)
	for i := range cells {
		cells[i] = laneCell{Lane: i, Exact: true, Beyond: i >= info.Lanes}
	}
	d.Total.Exact = true
	for _, l := range info.LaneStates {
		c := &cells[l.Lane]
		c.Ready += l.ReadyJobs
		c.Leased += l.LeasedJobs
		c.Scheduled += l.ScheduledJobs
		c.Exact = c.Exact && l.Exact
		if l.Leased {
			c.Holder = l.Holder
		}
		if !l.OldestReady.IsZero() && (oldest[l.Lane].IsZero() || l.OldestReady.Before(oldest[l.Lane])) {
			oldest[l.Lane] = l.OldestReady
		}
	}
	for i := range cells {
		d.Peak = max(d.Peak, cells[i].Ready+cells[i].Leased)
	}
	var all time.Time
	for i := range cells {
		c := &cells[i]
		c.OldestAge = "-"
		if !oldest[i].IsZero() {
			c.OldestAge = present.Age(now.Sub(oldest[i]))
			if all.IsZero() || oldest[i].Before(all) {
				all = oldest[i]
			}
		}
		if load := c.Ready + c.Leased; load > 0 && d.Peak > 0 {
			c.Level = max(1, min(8, (load*8+d.Peak-1)/d.Peak))
		}
		d.Total.Ready += c.Ready
		d.Total.Leased += c.Leased
		d.Total.Scheduled += c.Scheduled
		d.Total.Exact = d.Total.Exact && c.Exact
	}
	d.Total.OldestAge = "-"
	if !all.IsZero() {
		d.Total.OldestAge = present.Age(now.Sub(all))
	}
	d.Cells = cells
	h.render(w, r, http.StatusOK, "zone", "Zone "+d.Type+" / "+tenantName(d.Tenant), true, d)
}

// unknownType is the error of a page asked for a task type the queue does
// not know.
func unknownType(t string) error {
	return fmt.Errorf("unknown task type %q: no job of it was ever enqueued", trunc(t, 60))
}

// tenantName is how a page names a tenant: "(no tenant)" for the zone of
// jobs without an item space.
func tenantName(s string) string {
	if s == "" {
		return "(no tenant)"
	}
	return s
}

// limitCell shows a tenant's limits: "2 of 5 running · 10/s · weight 3",
// or "-" when it has none.
func limitCell(td quick.TenantDepth) string {
	l := td.Limits
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d running", td.Running, l.Concurrency))
	}
	if l.Rate > 0 {
		parts = append(parts, strconv.FormatFloat(l.Rate, 'g', -1, 64)+"/s")
	}
	if l.Weight > 1 {
		parts = append(parts, fmt.Sprintf("weight %d", l.Weight))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " · ")
}
