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

const defaultBudget = 1000

func (a *app) lanesCommand() *cli.Command {
	return &cli.Command{
		Name:  "lanes",
		Usage: "per task type and lane: ready, leased and scheduled jobs, oldest ready job, load strip; with --layout zones also the pointer index",
		Description: "Counts come from bounded scans (quick.LaneCounts): one range read per lane and priority,\n" +
			"at most --budget keys each. A count shown as ≥N hit the budget and is a lower bound.\n" +
			"Load is ready + leased jobs per lane; the strip scales it to the busiest lane (· is an empty lane).\n" +
			"With --layout zones the schema-1 lanes (still drained) are followed by each type's pointer index:\n" +
			"the first --zones entries, one per lane of a tenant's zone holding jobs (see quick zones, quick tenants).",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.IntFlag{Name: "budget", Value: defaultBudget, Usage: "most keys read per lane and priority range"},
			&cli.BoolFlag{Name: "compact", Usage: "one summary line and load strip per type, no per-lane rows"},
			&cli.IntFlag{Name: "zones", Value: 20, Usage: "with --layout zones: pointer index entries shown per type"},
			outputFlag(false),
		}, watchFlags()...),
		Action: a.lanes,
	}
}

// laneRow is one lane in JSON output.
type laneRow struct {
	Lane             int        `json:"lane"`
	Ready            int        `json:"ready"`
	Leased           int        `json:"leased"`
	Scheduled        int        `json:"scheduled"`
	OldestReady      *time.Time `json:"oldest_ready,omitempty"`
	OldestReadyAgeMs *int64     `json:"oldest_ready_age_ms,omitempty"`
	Exact            bool       `json:"exact"`
}

// laneReport is one task type's lanes.
type laneReport struct {
	TaskType string    `json:"task_type"`
	Lanes    []laneRow `json:"lanes"`
	Total    laneRow   `json:"total"`
}

func (a *app) lanes(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	budget := c.Int("budget")
	if budget <= 0 {
		return fmt.Errorf("invalid --budget %d: want a positive number of keys per range", budget)
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	if err := checkTypes(c.Context, q, c.StringSlice("type")...); err != nil {
		return err
	}
	zones := true // TODO(issue 21, console): zones is the one layout
	if zones && c.Int("zones") <= 0 {
		return fmt.Errorf("invalid --zones %d: want a positive number of entries", c.Int("zones"))
	}
	return a.watch(c, "lanes", func(w io.Writer) error {
		before := a.stats()
		reps, err := laneReports(c.Context, q, c.StringSlice("type"), budget, a.now())
		if err != nil {
			return err
		}
		var ptrs []pointerReport
		if zones {
			if ptrs, err = pointerReports(c.Context, q, c.StringSlice("type"), c.Int("zones"), ""); err != nil {
				return err
			}
		}
		cost := a.stats().Sub(before)
		if f == formatJSON {
			return writeJSON(w, lanesJSON{Types: reps, Zones: ptrs, Budget: budget, Cost: costOf(cost)})
		}
		renderLanes(w, reps, a.now(), c.Bool("compact"))
		if zones {
			fmt.Fprintln(w)
			renderPointers(w, ptrs, a.now())
		}
		fmt.Fprintf(w, "cost: %d range reads, %d keys read (budget %d keys per range)\n", cost.RangeReads, cost.KeysRead, budget)
		return nil
	})
}

type lanesJSON struct {
	Types []laneReport `json:"types"`
	// Zones is each type's first pointer index entries (--layout zones).
	Zones  []pointerReport `json:"zones,omitempty"`
	Budget int             `json:"budget"`
	Cost   costJSON        `json:"cost"`
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

func laneReports(ctx context.Context, q *quick.Queue, asked []string, budget int, now time.Time) ([]laneReport, error) {
	types, err := taskTypes(ctx, q, asked)
	if err != nil {
		return nil, err
	}
	reps := make([]laneReport, 0, len(types))
	for _, t := range types {
		// quick.Depth counts the type's zones (the schema-1 lanes are
		// gone): the report has its total, no per-lane rows.
		d, err := q.Depth(ctx, quick.DepthOptions{TaskType: t, Budget: budget})
		if err != nil {
			return nil, err
		}
		rep := laneReport{TaskType: t, Total: laneRow{Lane: -1, Ready: d.Ready, Leased: d.Leased, Scheduled: d.Scheduled, Exact: d.Exact}}
		oldest := d.OldestReady
		setOldest(&rep.Total, oldest, now)
		reps = append(reps, rep)
	}
	return reps, nil
}

func setOldest(r *laneRow, t, now time.Time) {
	if t.IsZero() {
		return
	}
	r.OldestReady = timePtr(t)
	age := now.Sub(t).Milliseconds()
	r.OldestReadyAgeMs = &age
}

func ageCell(r laneRow) string {
	if r.OldestReadyAgeMs == nil {
		return "-"
	}
	return present.Age(time.Duration(*r.OldestReadyAgeMs) * time.Millisecond)
}

// renderLanes writes each type's summary line and load strip and, unless
// compact, a row per lane with a bar scaled to the busiest lane.
func renderLanes(w io.Writer, reps []laneReport, now time.Time, compact bool) {
	if len(reps) == 0 {
		fmt.Fprintln(w, "no task types yet: nothing was ever enqueued in this queue")
		return
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		loads := make([]int, len(rep.Lanes))
		maxLoad, maxLane := 0, 0
		for j, l := range rep.Lanes {
			loads[j] = l.Ready + l.Leased
			if loads[j] > maxLoad {
				maxLoad, maxLane = loads[j], l.Lane
			}
		}
		t := rep.Total
		fmt.Fprintf(w, "%s  %d lanes  ready %s  leased %s  scheduled %s  oldest ready %s\n",
			rep.TaskType, len(rep.Lanes), fmtCount(t.Ready, t.Exact), fmtCount(t.Leased, t.Exact),
			fmtCount(t.Scheduled, t.Exact), ageCell(t))
		fmt.Fprintf(w, "  load %s", strip(loads))
		if maxLoad > 0 {
			fmt.Fprintf(w, "  max %d in lane %d", maxLoad, maxLane)
		}
		fmt.Fprintln(w)
		if compact {
			continue
		}
		tw := newTable(w)
		row(tw, "  LANE", "READY", "LEASED", "SCHEDULED", "OLDEST", "LOAD")
		for j, l := range rep.Lanes {
			row(tw, fmt.Sprintf("  %d", l.Lane), fmtCount(l.Ready, l.Exact), fmtCount(l.Leased, l.Exact),
				fmtCount(l.Scheduled, l.Exact), ageCell(l), bar(loads[j], maxLoad, 20))
		}
		tw.Flush()
	}
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
