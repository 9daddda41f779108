package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

func (a *app) workersCommand() *cli.Command {
	return &cli.Command{
		Name:  "workers",
		Usage: "workers registered in the lanes registry: host, lanes watched, heartbeat age and count",
		Description: "A one-shot read of the registry cannot judge liveness the way workers do (by seeing a heartbeat\n" +
			"change on their own clock). Without --observe, STATUS compares the wall clock a worker wrote at\n" +
			"its last beat with this machine's clock (--stale), so clock skew shifts it. With --observe D the\n" +
			"registry is read twice, D apart, and a worker whose beat counter moved is \"beating\".",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.DurationFlag{Name: "stale", Value: 5 * time.Second, Usage: "a heartbeat older than this (by wall clock) is stale"},
			&cli.DurationFlag{Name: "observe", Usage: "read twice, this long apart, and report whose heartbeat moved"},
			outputFlag(false),
		},
		Action: a.workers,
	}
}

// registrySpace is where the worker runtime keeps the lanes registry:
// S(1,"w") beside the queue's keys (see quick/s1_keys.go).
func registrySpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("w") }

// workerRow is one registered worker as read from the registry.
type workerRow struct {
	TaskType  string     `json:"task_type"`
	ID        string     `json:"id"`
	Host      string     `json:"host,omitempty"`
	Lanes     []int      `json:"lanes"`
	NumLanes  int        `json:"num_lanes,omitempty"`
	Replicas  int        `json:"replicas,omitempty"`
	Beats     uint64     `json:"beats"`
	LastBeat  *time.Time `json:"last_beat,omitempty"`
	BeatAgeMs *int64     `json:"beat_age_ms,omitempty"`
	Status    string     `json:"status"`
	InfoError string     `json:"info_error,omitempty"`
}

func (a *app) workers(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	observe := c.Duration("observe")
	if observe < 0 {
		return fmt.Errorf("invalid --observe %v: want a positive duration", observe)
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
		first := map[string]uint64{}
		for _, r := range rows {
			first[r.TaskType+"\x00"+r.ID] = r.Beats
		}
		for i := range again {
			b, seen := first[again[i].TaskType+"\x00"+again[i].ID]
			switch {
			case !seen:
				again[i].Status = "joined"
			case again[i].Beats != b:
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
			case now.Sub(*r.LastBeat) > c.Duration("stale"):
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
		fmt.Fprintln(a.d.Stdout, "no workers registered")
		return nil
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TASK TYPE", "WORKER", "HOST", "LANES", "LAST BEAT", "BEATS", "STATUS")
	for _, r := range rows {
		lanes := present.LaneList(r.Lanes)
		if r.InfoError != "" {
			lanes = "? (" + r.InfoError + ")"
		} else if r.NumLanes > 0 {
			lanes = fmt.Sprintf("%s of %d", lanes, r.NumLanes)
		}
		beat := "-"
		if r.BeatAgeMs != nil {
			beat = present.Age(time.Duration(*r.BeatAgeMs)*time.Millisecond) + " ago"
		}
		row(tw, r.TaskType, r.ID, dash(r.Host), lanes, beat, r.Beats, r.Status)
	}
	return tw.Flush()
}

// readWorkers reads the registered workers of the given task types (every
// task type in the registry when none is given), one snapshot of the lanes
// registry per type.
func readWorkers(ctx context.Context, q *quick.Queue, types []string) ([]workerRow, error) {
	reg := lanes.NewRegistry(q.DB(), registrySpace(q), lanes.Options{})
	if len(types) == 0 {
		var err error
		if types, err = reg.TaskTypes(ctx); err != nil {
			return nil, fmt.Errorf("read the worker registry: %w", err)
		}
	}
	var rows []workerRow
	for _, t := range types {
		members, err := reg.Snapshot(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("read the worker registry: %w", err)
		}
		for _, m := range members {
			r := workerRow{TaskType: t, ID: m.ID, Host: m.Info.Host, Lanes: m.Info.Lanes, NumLanes: m.Info.NumLanes,
				Replicas: m.Info.Replicas, Beats: m.Counter}
			if r.Lanes == nil {
				r.Lanes = []int{}
			}
			if !m.Clock.IsZero() {
				w := m.Clock.UTC()
				r.LastBeat = &w
			}
			if m.InfoErr != nil {
				r.InfoError = m.InfoErr.Error()
			}
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b workerRow) int {
		if c := strings.Compare(a.TaskType, b.TaskType); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rows, nil
}
