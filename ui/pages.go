package ui

import (
	"github.com/quickfdb/quickfdb/internal/present"

	"net/http"
	"slices"
	"time"
)

// overviewRow is one task type on the overview.
type overviewRow struct {
	typeCounts
	OldestAge string
	Workers   int
	Chart     chart
	// DeadLastHour is how many dead letters the type gained in the
	// sampled window (a drop, from a purge or requeue, counts as zero).
	DeadLastHour int64
	// Paused is whether workers are stopped from claiming the type
	// (quick.Queue.Pause), and PausedFor since when.
	Paused    bool
	PausedFor string
}

type overviewData struct {
	Types      []overviewRow
	Cut        int // task types not shown (beyond maxTypesTracked)
	Throughput chart
	HasWorkers bool
	Sampled    string // the history's period and span
	Budget     int
}

// overview: per task type, its counts (typeCounts: LaneCounts + DeadCount),
// its registered workers (one registry snapshot per type), whether it is
// paused (one range read of the paused types for the page) and its charts
// from the in-process history.
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
	d := overviewData{HasWorkers: h.cfg.Workers != nil, Budget: h.cfg.Budget,
		Sampled: "every " + h.cfg.SampleEvery.String() + ", kept 1h, in this process"}
	types, d.Cut = capTypes(types)
	for _, t := range types {
		c, err := h.typeCounts(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		row := overviewRow{typeCounts: c, OldestAge: "-"}
		if !c.OldestReady.IsZero() {
			row.OldestAge = present.Age(now.Sub(c.OldestReady))
		}
		members, err := h.reg.Snapshot(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		row.Workers = len(members)
		if at, ok := paused[t]; ok {
			row.Paused, row.PausedFor = true, present.Age(now.Sub(at))
		}
		hs := h.hist.depthOf(t)
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
	if d.HasWorkers {
		comp, failed := procRates(h.hist.procs())
		d.Throughput = makeChart([]series{
			{Name: "completed/min", Class: "s-leased", Points: comp},
			{Name: "failed/min", Class: "s-dead", Points: failed},
		}, from, now, "")
	}
	h.render(w, r, http.StatusOK, "overview", "Overview", true, d)
}

// laneCell is one lane of the heat strip.
type laneCell struct {
	Lane                     int
	Ready, Leased, Scheduled int
	Exact                    bool
	Level                    int // 0 (empty) to 8 (the busiest lane)
	Watchers                 int // registered workers watching the lane
	OldestAge                string
}

type laneStrip struct {
	TaskType string
	Cells    []laneCell
	Total    typeCounts
	Peak     int
	Workers  int
	Uncover  int // lanes no registered worker watches
}

type lanesData struct {
	Types  []laneStrip
	Cut    int
	Lanes  int
	Budget int
}

// lanesPage: per task type, LaneCounts and a registry snapshot (who watches
// which lane).
func (h *Handler) lanesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	now := h.now()
	d := lanesData{Lanes: legacyLanes, Budget: h.cfg.Budget} // TODO(issue 21, console): Queue.Lanes is gone
	types, d.Cut = capTypes(types)
	for _, t := range types {
		c, err := h.typeCounts(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		members, err := h.reg.Snapshot(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		watch := make([]int, legacyLanes)
		for _, m := range members {
			for _, l := range m.Info.Lanes {
				if l >= 0 && l < len(watch) {
					watch[l]++
				}
			}
		}
		s := laneStrip{TaskType: t, Total: c, Workers: len(members)}
		for _, l := range c.Lanes {
			s.Peak = max(s.Peak, l.Ready+l.Leased)
		}
		for _, l := range c.Lanes {
			cell := laneCell{Lane: l.Lane, Ready: l.Ready, Leased: l.Leased, Scheduled: l.Scheduled, Exact: l.Exact, OldestAge: "-"}
			if load := l.Ready + l.Leased; load > 0 && s.Peak > 0 {
				cell.Level = max(1, min(8, (load*8+s.Peak-1)/s.Peak))
			}
			if l.Lane < len(watch) {
				cell.Watchers = watch[l.Lane]
			}
			if len(members) > 0 && cell.Watchers == 0 {
				s.Uncover++
			}
			if !l.OldestReady.IsZero() {
				cell.OldestAge = present.Age(now.Sub(l.OldestReady))
			}
			s.Cells = append(s.Cells, cell)
		}
		d.Types = append(d.Types, s)
	}
	h.render(w, r, http.StatusOK, "lanes", "Lanes", true, d)
}

// typeChoice returns the task type a page shows: the one asked for, else
// the first the queue knows ("" when there is none).
func typeChoice(asked string, types []string) string {
	if asked != "" || len(types) == 0 {
		return asked
	}
	return slices.Min(types)
}

// capTypes bounds the task types a page reads (each costs a LaneCounts), so
// a page's cost does not grow without bound with the number of types.
func capTypes(types []string) ([]string, int) {
	if len(types) <= maxTypesTracked {
		return types, 0
	}
	return types[:maxTypesTracked], len(types) - maxTypesTracked
}

// legacyLanes stands for the removed Queue.Lanes (schema 1's lane count).
// TODO(issue 21, console): the lanes page shows a zone's lanes instead.
const legacyLanes = 16
