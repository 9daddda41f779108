package main

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

func (a *app) statsCommand() *cli.Command {
	return &cli.Command{
		Name:  "stats",
		Usage: "per task type: ready, leased, scheduled and dead jobs, and the oldest ready job's age",
		Description: "Ready, leased and scheduled are counted across the type's zones, every tenant's, at most --budget\n" +
			"keys per type (≥N marks a lower bound); dead is an exact counter (one read per type).\n" +
			"quick tenants shows the same counts per tenant.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.IntFlag{Name: "budget", Value: defaultBudget, Usage: "most keys read per task type"},
			outputFlag(false),
		}, watchFlags()...),
		Action: a.statsAction,
	}
}

// statsJSON is stats in JSON output: an object, as every command's JSON
// output is, so fields can be added without breaking readers.
type statsJSON struct {
	Types  []statsRow         `json:"types"`
	Duties []worker.DutyState `json:"duties"`
}

type statsRow struct {
	TaskType         string     `json:"task_type"`
	Ready            int        `json:"ready"`
	Leased           int        `json:"leased"`
	Scheduled        int        `json:"scheduled"`
	Exact            bool       `json:"exact"`
	Dead             int64      `json:"dead"`
	OldestReady      *time.Time `json:"oldest_ready,omitempty"`
	OldestReadyAgeMs *int64     `json:"oldest_ready_age_ms,omitempty"`
	Paused           bool       `json:"paused,omitempty"`
}

func (a *app) statsAction(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	budget := c.Int("budget")
	if budget <= 0 {
		return fmt.Errorf("invalid --budget %d: want a positive number of keys", budget)
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	if err := checkTypes(c.Context, q, c.StringSlice("type")...); err != nil {
		return err
	}
	return a.watch(c, "stats", func(w io.Writer) error {
		rows, err := a.statsRows(c, q, budget)
		if err != nil {
			return err
		}
		if f == formatJSON {
			duties, err := worker.DutyStates(c.Context, q)
			if err != nil {
				return err
			}
			if duties == nil {
				duties = []worker.DutyState{}
			}
			return writeJSON(w, statsJSON{Types: rows, Duties: duties})
		}
		renderStats(w, rows)
		return printDuties(c.Context, w, q)
	})
}

// statsRows reads one frame of stats: a bounded depth count per type (with
// its dead-letter counter), and one range read of the paused types.
func (a *app) statsRows(c *cli.Context, q *quick.Queue, budget int) ([]statsRow, error) {
	reps, err := depthReports(c.Context, q, c.StringSlice("type"), nil, budget, 1, a.now())
	if err != nil {
		return nil, err
	}
	paused, err := q.PausedTypes(c.Context)
	if err != nil {
		return nil, err
	}
	rows := []statsRow{}
	for _, r := range reps {
		rows = append(rows, statsRow{TaskType: r.TaskType, Ready: r.Ready, Leased: r.Leased, Scheduled: r.Scheduled,
			Exact: r.Exact, Dead: r.Dead, OldestReady: r.OldestReady, OldestReadyAgeMs: r.OldestReadyAgeMs, Paused: !paused[r.TaskType].IsZero()})
	}
	return rows, nil
}

func renderStats(w io.Writer, rows []statsRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no task types yet: nothing was ever enqueued in this queue")
		return
	}
	tw := newTable(w)
	row(tw, "TASK TYPE", "READY", "LEASED", "SCHEDULED", "DEAD", "OLDEST READY")
	for _, r := range rows {
		name := r.TaskType
		if r.Paused {
			name += " (paused)"
		}
		row(tw, name, fmtCount(r.Ready, r.Exact), fmtCount(r.Leased, r.Exact), fmtCount(r.Scheduled, r.Exact),
			r.Dead, ageCell(countRow{OldestReadyAgeMs: r.OldestReadyAgeMs}))
	}
	tw.Flush()
}
