package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// maxWorkersListed bounds the worker records one command reads.
const maxWorkersListed = 1000

func (a *app) workersCommand() *cli.Command {
	return &cli.Command{
		Name:  "workers",
		Usage: "live workers, one row per worker: its process, task types, the jobs it runs, its last heartbeat",
		Description: "Each worker writes one presence record per heartbeat period; this reads at most 1,000 of them in one\n" +
			"range read. Without --observe, STATUS compares the wall clock a worker wrote at its last beat with\n" +
			"this machine's clock (--stale), so clock skew shifts it. With --observe D the records are read\n" +
			"twice, D apart, and a worker whose heartbeat moved is \"beating\".",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "only workers of this task type (repeatable); default every worker"},
			&cli.DurationFlag{Name: "stale", Value: 5 * time.Second, Usage: "a heartbeat older than this (by wall clock) is stale"},
			&cli.DurationFlag{Name: "observe", Usage: "read twice, this long apart, and report whose heartbeat moved"},
			outputFlag(false),
		},
		Action: a.workers,
	}
}

// workerRow is one worker in the output.
type workerRow struct {
	ID      string `json:"id"`
	Process string `json:"process,omitempty"`
	// Cluster is the cluster the worker serves this database as, in a
	// process serving several (worker.Group).
	Cluster   string     `json:"cluster,omitempty"`
	TaskTypes []string   `json:"task_types"`
	Running   []quick.ID `json:"running"`
	Started   *time.Time `json:"started,omitempty"`
	LastBeat  *time.Time `json:"last_beat,omitempty"`
	BeatAgeMs *int64     `json:"beat_age_ms,omitempty"`
	Status    string     `json:"status"`
}

func (a *app) workers(c *cli.Context) error {
	observe, stale := c.Duration("observe"), c.Duration("stale")
	if observe < 0 {
		return fmt.Errorf("invalid --observe %v: want a positive duration", observe)
	}
	if stale <= 0 {
		return fmt.Errorf("invalid --stale %v: want a positive duration", stale)
	}
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	rows, err := readWorkers(c.Context, q, c.StringSlice("type"))
	if err != nil {
		return err
	}
	if observe > 0 {
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-a.d.Clock.After(observe):
		}
		again, err := readWorkers(c.Context, q, c.StringSlice("type"))
		if err != nil {
			return err
		}
		first := map[string]*time.Time{}
		for _, r := range rows {
			first[r.ID] = r.LastBeat
		}
		for i := range again {
			b, seen := first[again[i].ID]
			switch {
			case !seen:
				again[i].Status = "joined"
			case again[i].LastBeat != nil && (b == nil || !again[i].LastBeat.Equal(*b)):
				again[i].Status = "beating"
			default:
				again[i].Status = "silent"
			}
		}
		rows = again
	}
	now := a.now()
	for i := range rows {
		r := &rows[i]
		if r.LastBeat != nil {
			age := now.Sub(*r.LastBeat).Milliseconds()
			r.BeatAgeMs = &age
		}
		if observe == 0 {
			switch {
			case r.LastBeat == nil:
				r.Status = "unknown"
			case now.Sub(*r.LastBeat) > stale:
				r.Status = "stale"
			default:
				r.Status = "ok"
			}
		}
	}
	if f == formatJSON {
		if rows == nil {
			rows = []workerRow{}
		}
		return writeJSON(a.d.Stdout, struct {
			Workers []workerRow `json:"workers"`
		}{rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.d.Stdout, "no live workers")
		return nil
	}
	tw := newTable(a.d.Stdout)
	// A CLUSTER column when a worker serves several clusters (worker.Group).
	clusters := slices.ContainsFunc(rows, func(r workerRow) bool { return r.Cluster != "" })
	if clusters {
		row(tw, "WORKER", "CLUSTER", "PROCESS", "TASK TYPES", "RUNNING", "LAST BEAT", "STATUS")
	} else {
		row(tw, "WORKER", "PROCESS", "TASK TYPES", "RUNNING", "LAST BEAT", "STATUS")
	}
	for _, r := range rows {
		beat := "-"
		if r.BeatAgeMs != nil {
			beat = present.Age(time.Duration(*r.BeatAgeMs)*time.Millisecond) + " ago"
		}
		if clusters {
			row(tw, r.ID, dash(r.Cluster), dash(r.Process), oneLine(strings.Join(r.TaskTypes, ","), 40), len(r.Running), beat, r.Status)
			continue
		}
		row(tw, r.ID, dash(r.Process), oneLine(strings.Join(r.TaskTypes, ","), 40), len(r.Running), beat, r.Status)
	}
	return tw.Flush()
}

// readWorkers reads the live workers, those of the given task types only
// when some are given.
func readWorkers(ctx context.Context, q *quick.Queue, types []string) ([]workerRow, error) {
	ps, err := listWorkers(ctx, q)
	if err != nil {
		return nil, err
	}
	var rows []workerRow
	for _, p := range ps {
		if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return slices.Contains(p.TaskTypes, t) }) {
			continue
		}
		r := workerRow{ID: p.ID, Process: p.Process, Cluster: p.Cluster, TaskTypes: p.TaskTypes, Running: p.Running,
			Started: timePtr(p.Started), LastBeat: timePtr(p.Beat)}
		if r.TaskTypes == nil {
			r.TaskTypes = []string{}
		}
		if r.Running == nil {
			r.Running = []quick.ID{}
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b workerRow) int { return strings.Compare(a.ID, b.ID) })
	return rows, nil
}

// listWorkers is the one place the CLI reads worker presence
// (worker.ListWorkers: one range read of at most maxWorkersListed records).
func listWorkers(ctx context.Context, q *quick.Queue) ([]worker.Presence, error) {
	ps, err := worker.ListWorkers(ctx, q, maxWorkersListed)
	if err != nil {
		return nil, fmt.Errorf("read the workers: %w", err)
	}
	return ps, nil
}
