package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// defaultBudget is the most keys a depth count reads per task type.
const defaultBudget = 10_000

func (a *app) lanesCommand() *cli.Command {
	return &cli.Command{
		Name:  "lanes",
		Usage: "the lanes of one tenant's zone: per lane, ready, leased and scheduled jobs, who holds it, a load strip",
		Description: "A zone is one tenant's queue of one task type (the no-tenant zone holds jobs without an item space).\n" +
			"It spreads new jobs over hash lanes, each taken by one worker at a time; a backlogged zone grows\n" +
			"its lanes and splits a deep lane's backlog into empty ones, so that more workers drain it at once.\n" +
			"Without --tenant, the zone of the tenant with the most ready work is shown.\n" +
			"Cost: the zone's meta and lane states (one point read, one range read), then one range read per\n" +
			"lane of its keys, about 10,000 keys in all; a count shown as ≥N hit that bound. Load is ready +\n" +
			"leased jobs per lane; the strip scales it to the busiest lane (· is an empty lane).",
		Flags: append([]cli.Flag{
			typeFlag(),
			&cli.StringFlag{Name: "tenant", Usage: "the tenant (item space) whose zone to show; \"\" is the no-tenant zone", DefaultText: "the tenant with the most ready work"},
			&cli.BoolFlag{Name: "compact", Usage: "the summary line and load strip only, no per-lane rows"},
			outputFlag(false),
		}, watchFlags()...),
		Action: a.lanes,
	}
}

// countRow is a count of jobs by state, with the oldest ready job.
type countRow struct {
	Ready            int        `json:"ready"`
	Leased           int        `json:"leased"`
	Scheduled        int        `json:"scheduled"`
	OldestReady      *time.Time `json:"oldest_ready,omitempty"`
	OldestReadyAgeMs *int64     `json:"oldest_ready_age_ms,omitempty"`
	Exact            bool       `json:"exact"`
}

func (r countRow) total() int { return r.Ready + r.Leased + r.Scheduled }

// zoneLane is one lane of a zone, its priorities summed.
type zoneLane struct {
	Lane int `json:"lane"`
	countRow
	// LeasedBy is the worker holding the lane (taking its jobs) now.
	LeasedBy string `json:"leased_by,omitempty"`
	Short    bool   `json:"short,omitempty"`
	// PointerMissing says a lane state names no pointer entry: workers
	// may not find its jobs (a broken invariant).
	PointerMissing bool `json:"pointer_missing,omitempty"`
}

// zoneReport is one zone's lanes.
type zoneReport struct {
	TaskType  string `json:"task_type"`
	ItemSpace string `json:"item_space"`
	// ZoneLanes is how many lanes new jobs are spread over.
	ZoneLanes int        `json:"zone_lanes"`
	Lanes     []zoneLane `json:"lanes"`
	Total     countRow   `json:"total"`
	// Cap is the most keys counted per lane.
	Cap  int      `json:"cap"`
	Cost costJSON `json:"cost"`
}

func (a *app) lanes(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return newUsageError(c, fmt.Errorf("quick lanes takes no arguments, got %q (the tenant is --tenant)", c.Args().First()))
	}
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t := c.String("type")
	if err := checkTypes(c.Context, q, t); err != nil {
		return err
	}
	return a.watch(c, "lanes", func(w io.Writer) error {
		before := a.stats()
		tenant, chosen := c.String("tenant"), false
		if !c.IsSet("tenant") {
			d, err := q.Depth(c.Context, quick.DepthOptions{TaskType: t, TopTenants: 1})
			if err != nil {
				return err
			}
			if len(d.Tenants) == 0 {
				if f == formatJSON {
					return writeJSON(w, struct {
						TaskType string       `json:"task_type"`
						Zones    []zoneReport `json:"zones"`
					}{t, []zoneReport{}})
				}
				fmt.Fprintf(w, "%s: no zone holds jobs\n", t)
				return nil
			}
			tenant, chosen = d.Tenants[0].ItemSpace, true
		}
		rep, err := zoneReportOf(c.Context, q, t, tenant, a.now())
		if err != nil {
			return err
		}
		rep.Cost = costOf(a.stats().Sub(before))
		if f == formatJSON {
			return writeJSON(w, rep)
		}
		renderZone(w, rep, chosen, c.Bool("compact"))
		fmt.Fprintf(w, "cost: %d point reads, %d range reads, %d keys read\n", rep.Cost.PointReads, rep.Cost.RangeReads, rep.Cost.KeysRead)
		return nil
	})
}

// zoneReportOf reads one zone's lanes (quick.Queue.ZoneInfo) and sums each
// lane's priorities.
func zoneReportOf(ctx context.Context, q *quick.Queue, taskType, tenant string, now time.Time) (zoneReport, error) {
	info, err := q.ZoneInfo(ctx, taskType, tenant)
	if err != nil {
		return zoneReport{}, err
	}
	rep := zoneReport{TaskType: taskType, ItemSpace: tenant, ZoneLanes: info.Lanes, Cap: info.Cap, Lanes: []zoneLane{}}
	n := info.Lanes
	for _, l := range info.LaneStates {
		n = max(n, l.Lane+1) // a lane past the count drains what it holds
	}
	byLane := make([]zoneLane, n)
	for i := range byLane {
		byLane[i] = zoneLane{Lane: i, countRow: countRow{Exact: true}}
	}
	oldest := make([]time.Time, n)
	var all time.Time
	rep.Total.Exact = true
	for _, l := range info.LaneStates {
		z := &byLane[l.Lane]
		z.Ready += l.ReadyJobs
		z.Leased += l.LeasedJobs
		z.Scheduled += l.ScheduledJobs
		z.Exact = z.Exact && l.Exact
		z.PointerMissing = z.PointerMissing || l.PointerMissing
		if l.Leased {
			z.LeasedBy, z.Short = l.Holder, l.Short
		}
		if !l.OldestReady.IsZero() && (oldest[l.Lane].IsZero() || l.OldestReady.Before(oldest[l.Lane])) {
			oldest[l.Lane] = l.OldestReady
		}
	}
	for i := range byLane {
		setOldest(&byLane[i].countRow, oldest[i], now)
		z := byLane[i]
		rep.Total.Ready += z.Ready
		rep.Total.Leased += z.Leased
		rep.Total.Scheduled += z.Scheduled
		rep.Total.Exact = rep.Total.Exact && z.Exact
		if !oldest[i].IsZero() && (all.IsZero() || oldest[i].Before(all)) {
			all = oldest[i]
		}
	}
	setOldest(&rep.Total, all, now)
	rep.Lanes = byLane
	return rep, nil
}

// renderZone writes a zone's summary line and load strip and, unless
// compact, a row per lane with a bar scaled to the busiest lane.
func renderZone(w io.Writer, rep zoneReport, chosen, compact bool) {
	loads := make([]int, len(rep.Lanes))
	maxLoad, maxLane := 0, 0
	for j, l := range rep.Lanes {
		loads[j] = l.Ready + l.Leased
		if loads[j] > maxLoad {
			maxLoad, maxLane = loads[j], l.Lane
		}
	}
	t := rep.Total
	fmt.Fprintf(w, "%s  tenant %s  %d lanes for new jobs  ready %s  leased %s  scheduled %s  oldest ready %s\n",
		rep.TaskType, tenantCell(rep.ItemSpace), rep.ZoneLanes, fmtCount(t.Ready, t.Exact), fmtCount(t.Leased, t.Exact),
		fmtCount(t.Scheduled, t.Exact), ageCell(t))
	if chosen {
		fmt.Fprintln(w, "  (the tenant with the most ready work; --tenant chooses another)")
	}
	fmt.Fprintf(w, "  load %s", strip(loads))
	if maxLoad > 0 {
		fmt.Fprintf(w, "  max %d in lane %d", maxLoad, maxLane)
	}
	fmt.Fprintln(w)
	if compact || len(rep.Lanes) == 0 {
		return
	}
	tw := newTable(w)
	row(tw, "  LANE", "READY", "LEASED", "SCHEDULED", "OLDEST", "HELD BY", "LOAD")
	for j, l := range rep.Lanes {
		holder := dash(l.LeasedBy)
		if l.Short {
			holder += " (short jobs)"
		}
		if l.PointerMissing {
			holder += " (no pointer!)"
		}
		row(tw, fmt.Sprintf("  %d", l.Lane), fmtCount(l.Ready, l.Exact), fmtCount(l.Leased, l.Exact),
			fmtCount(l.Scheduled, l.Exact), ageCell(l.countRow), holder, bar(loads[j], maxLoad, 20))
	}
	tw.Flush()
}

type costJSON struct {
	RangeReads int64 `json:"range_reads"`
	PointReads int64 `json:"point_reads"`
	KeysRead   int64 `json:"keys_read"`
}

func costOf(s kv.Stats) costJSON {
	return costJSON{RangeReads: s.RangeReads, PointReads: s.Reads, KeysRead: s.KeysRead}
}

// taskTypes returns the types asked for, or every type the queue knows.
func taskTypes(ctx context.Context, q *quick.Queue, asked []string) ([]string, error) {
	if len(asked) > 0 {
		return asked, nil
	}
	ts, err := q.TaskTypes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list task types: %w", err)
	}
	return ts, nil
}

// typeDepth is one task type's depth: its jobs by state across its zones
// and its top tenants.
type typeDepth struct {
	TaskType string `json:"task_type"`
	countRow
	Dead         int64         `json:"dead"`
	Tenants      []tenantDepth `json:"tenants"`
	TenantsExact bool          `json:"tenants_exact"`
}

// tenantDepth is one tenant's jobs of a task type (its zone).
type tenantDepth struct {
	ItemSpace string `json:"item_space"`
	countRow
	// Lanes is how many of the zone's lanes hold jobs (counted through
	// the pointer index).
	Lanes int `json:"lanes"`
	// Running is the jobs holding a slot of the tenant's concurrency
	// limit, ConcurrencyLimit and RateLimit its limits (0: none).
	Running          int64   `json:"running,omitempty"`
	ConcurrencyLimit int     `json:"concurrency_limit,omitempty"`
	RateLimit        float64 `json:"rate_limit,omitempty"`
	// StartsPerSecond is the jobs it started a second over the last
	// minute (quick tenants only: worker.ReadTenantStarts).
	StartsPerSecond *float64 `json:"starts_per_second,omitempty"`
}

// depthReports reads the depth of the types asked for (every type when
// none is): one bounded count per type (at most budget keys) and its dead
// letters' counter.
func depthReports(ctx context.Context, q *quick.Queue, asked, tenants []string, budget, top int, now time.Time) ([]typeDepth, error) {
	types, err := taskTypes(ctx, q, asked)
	if err != nil {
		return nil, err
	}
	reps := make([]typeDepth, 0, len(types))
	for _, t := range types {
		d, err := q.Depth(ctx, quick.DepthOptions{TaskType: t, ItemSpaces: tenants, Budget: budget, TopTenants: top})
		if err != nil {
			return nil, err
		}
		rep := typeDepth{TaskType: t, Dead: d.Dead, TenantsExact: d.TenantsExact, Tenants: []tenantDepth{},
			countRow: countRow{Ready: d.Ready, Leased: d.Leased, Scheduled: d.Scheduled, Exact: d.Exact}}
		setOldest(&rep.countRow, d.OldestReady, now)
		for _, td := range d.Tenants {
			r := tenantDepth{ItemSpace: td.ItemSpace, Lanes: td.Lanes,
				countRow: countRow{Ready: td.Ready, Leased: td.Leased, Scheduled: td.Scheduled, Exact: td.Exact},
				Running:  td.Running, ConcurrencyLimit: max(td.Limits.Concurrency, 0), RateLimit: max(td.Limits.Rate, 0)}
			setOldest(&r.countRow, td.OldestReady, now)
			rep.Tenants = append(rep.Tenants, r)
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

func setOldest(r *countRow, t, now time.Time) {
	if t.IsZero() {
		return
	}
	r.OldestReady = timePtr(t)
	age := now.Sub(t).Milliseconds()
	r.OldestReadyAgeMs = &age
}

func ageCell(r countRow) string {
	if r.OldestReadyAgeMs == nil {
		return "-"
	}
	return present.Age(time.Duration(*r.OldestReadyAgeMs) * time.Millisecond)
}

var levels = []rune("▁▂▃▄▅▆▇█")

// strip renders one character per lane, scaled to the largest value: an
// empty lane is ·, the busiest █.
func strip(values []int) string {
	peak := 0
	for _, v := range values {
		peak = max(peak, v)
	}
	var sb strings.Builder
	for _, v := range values {
		if v <= 0 {
			sb.WriteRune('·')
			continue
		}
		lvl := (v*len(levels) + peak - 1) / peak // ceil, 1..8
		sb.WriteRune(levels[min(max(lvl, 1), len(levels))-1])
	}
	return sb.String()
}

var eighths = []rune("▏▎▍▌▋▊▉")

// bar renders v as a horizontal bar of up to width cells, scaled to peak
// (· for nothing).
func bar(v, peak, width int) string {
	if v <= 0 || peak <= 0 {
		return "·"
	}
	n := (v*width*8 + peak - 1) / peak // eighths of a cell, rounded up
	var sb strings.Builder
	sb.WriteString(strings.Repeat("█", n/8))
	if r := n % 8; r > 0 {
		sb.WriteRune(eighths[r-1])
	}
	return sb.String()
}
