package ui

import (
	"net/http"
	"slices"
	"time"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/worker"
)

// overviewRow is one task type on the overview.
type overviewRow struct {
	typeCounts
	OldestAge string
	Workers   int
	// Top is the tenants with the most ready work (at most overviewTop).
	Top   []topTenant
	Chart chart
	// DeadLastHour is how many dead letters the type gained in the
	// sampled window (a drop, from a purge or requeue, counts as zero).
	DeadLastHour int64
	// Paused is whether workers are stopped from claiming the type
	// (quick.Queue.Pause), and PausedFor since when.
	Paused    bool
	PausedFor string
	// Completed and Failed are the fleet's jobs of the type in the last
	// hour (worker.ReadThroughput), Rate its completions in the last full
	// minute.
	Completed, Failed int64
	Rate              int64
}

// topTenant is a tenant the overview names, with its ready work.
type topTenant struct {
	Name  string
	Ready int
	Exact bool
	URL   string
}

type overviewData struct {
	Types      []overviewRow
	Cut        int // task types not shown (beyond maxTypesTracked)
	Throughput chart
	// ThroughputCut says the throughput read hit its limit: the latest
	// minutes are missing.
	ThroughputCut bool
	Sampled       string // the history's period and span
	Budget        int
	At            time.Time // when the page's counts were read
}

// overviewTop is how many top tenants the overview names per task type.
const overviewTop = 3

// overview: per task type, its counts and top tenants (typeCounts:
// quick.Queue.Depth), its live workers (one read of the workers' presence
// for the page), whether it is paused (one range read of the paused types
// for the page) and its charts from the in-process history.
func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	now := h.now()
	from := now.Add(-time.Hour)
	paused, err := h.q.PausedTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d := overviewData{Budget: h.cfg.Budget, At: now,
		Sampled: "every " + h.cfg.SampleEvery.String() + ", kept 1h, in this process"}
	types, d.Cut = capTypes(types)
	workers, err := h.listWorkers(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	tp, err := worker.ReadThroughput(ctx, h.q, worker.ThroughputOptions{Since: from})
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	d.ThroughputCut = !tp.Exact
	lastFull := now.Truncate(time.Minute).Add(-time.Minute)
	for _, t := range types {
		c, err := h.typeCounts(ctx, t, overviewTop)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		row := overviewRow{typeCounts: c, OldestAge: "-"}
		for _, td := range c.Tenants {
			if td.Ready > 0 {
				row.Top = append(row.Top, topTenant{Name: tenantName(td.ItemSpace), Ready: td.Ready, Exact: td.Exact, URL: h.zoneURL(t, td.ItemSpace)})
			}
		}
		if !c.OldestReady.IsZero() {
			row.OldestAge = present.Age(now.Sub(c.OldestReady))
		}
		for _, p := range workers {
			if slices.Contains(p.TaskTypes, t) {
				row.Workers++
			}
		}
		if at, ok := paused[t]; ok {
			row.Paused, row.PausedFor = true, present.Age(now.Sub(at))
		}
		for _, m := range tp.Minutes {
			if m.TaskType == t {
				row.Completed += m.Completed
				row.Failed += m.Failed
				if m.Minute.Equal(lastFull) {
					row.Rate = m.Completed
				}
			}
		}
		// The chart ends with this page's own counts, so its legend says
		// what the table says: one read per page, not two samples.
		hs := append(h.hist.depthOf(t), depthSample{At: c.At, Ready: c.Ready, Leased: c.Leased, Scheduled: c.Scheduled, Dead: c.Dead, Exact: c.Exact})
		var ready, leased, sched, dead []point
		for i, s := range hs {
			ready = append(ready, point{s.At, float64(s.Ready)})
			leased = append(leased, point{s.At, float64(s.Leased)})
			sched = append(sched, point{s.At, float64(s.Scheduled)})
			dead = append(dead, point{s.At, float64(s.Dead)})
			if i > 0 && s.Dead > hs[i-1].Dead {
				row.DeadLastHour += s.Dead - hs[i-1].Dead
			}
		}
		row.Chart = makeChart([]series{
			{Name: "ready", Class: "s-ready", Points: ready},
			{Name: "leased", Class: "s-leased", Points: leased},
			{Name: "scheduled", Class: "s-sched", Points: sched},
			{Name: "dead", Class: "s-dead", Points: dead},
		}, from, now, "")
		d.Types = append(d.Types, row)
	}
	comp, failed := fleetRates(tp, now)
	d.Throughput = makeChart([]series{
		{Name: "completed/min", Class: "s-leased", Points: comp},
		{Name: "failed/min", Class: "s-dead", Points: failed},
	}, from, now, "")
	h.render(w, r, http.StatusOK, "overview", "Overview", true, d)
}

// fleetRates sums the fleet's minutes over the task types: jobs completed
// and failed per minute, each minute drawn as a step from its start to its
// end (the minute in progress up to now), so that a single minute shows.
func fleetRates(tp worker.Throughput, now time.Time) (completed, failed []point) {
	type sum struct {
		at   time.Time
		c, f float64
	}
	var sums []sum
	for _, m := range tp.Minutes {
		if n := len(sums); n > 0 && sums[n-1].at.Equal(m.Minute) {
			sums[n-1].c += float64(m.Completed)
			sums[n-1].f += float64(m.Failed)
			continue
		}
		sums = append(sums, sum{m.Minute, float64(m.Completed), float64(m.Failed)})
	}
	for _, s := range sums {
		end := s.at.Add(time.Minute - time.Millisecond)
		if end.After(now) {
			end = now
		}
		completed = append(completed, point{s.at, s.c}, point{end, s.c})
		failed = append(failed, point{s.at, s.f}, point{end, s.f})
	}
	return completed, failed
}

// typeChoice returns the task type a page shows: the one asked for, else
// the first the queue knows ("" when there is none).
func typeChoice(asked string, types []string) string {
	if asked != "" || len(types) == 0 {
		return asked
	}
	return slices.Min(types)
}

// capTypes bounds the task types a page reads (each costs a count), so
// a page's cost does not grow without bound with the number of types.
func capTypes(types []string) ([]string, int) {
	if len(types) <= maxTypesTracked {
		return types, 0
	}
	return types[:maxTypesTracked], len(types) - maxTypesTracked
}
