package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
)

func (a *app) deadCommand() *cli.Command {
	return &cli.Command{
		Name:   "dead",
		Usage:  "list, requeue and purge dead letters",
		Action: unknownCommand,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list a task type's dead letters, oldest first",
				Flags: []cli.Flag{
					typeFlag(),
					&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 50, Usage: "most jobs listed"},
					&cli.StringFlag{Name: "after", Usage: "resume a listing from the cursor the previous page printed"},
					outputFlag(false),
				},
				Action: a.deadList,
			},
			{
				Name:      "requeue",
				Usage:     "take dead jobs out of the dead letters and run them now, attempts reset; by ID, or with --type those the filter flags select",
				ArgsUsage: "ID [ID...] | --type TYPE [filters]",
				Flags: []cli.Flag{
					outputFlag(false),
					&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "with no ID: requeue this task type's dead letters that match the filter flags"},
					&cli.StringFlag{Name: "error-contains", Usage: "with --type: only dead letters whose last error contains this"},
					&cli.DurationFlag{Name: "died-within", Usage: "with --type: only those that died less than this long ago"},
					&cli.DurationFlag{Name: "died-before", Usage: "with --type: only those that died more than this long ago"},
					&cli.IntFlag{Name: "limit", Value: 10_000, Usage: "with --type: most dead letters requeued"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 && c.IsSet("type") {
						return a.deadRequeueFiltered(c)
					}
					if c.NArg() == 0 {
						return newUsageError(c, errors.New("quick dead requeue needs at least one job ID argument"))
					}
					var ids []quick.ID
					for _, s := range c.Args().Slice() {
						id, err := quick.ParseID(s)
						if err != nil {
							return err
						}
						ids = append(ids, id)
					}
					return a.requeue(c, ids)
				},
			},
			{
				Name:  "purge",
				Usage: "delete dead letters older than --older-than, or beyond the newest --keep (asks for confirmation)",
				Flags: []cli.Flag{
					typeFlag(),
					&cli.DurationFlag{Name: "older-than", Usage: "delete dead letters that died longer ago than this (e.g. 72h)"},
					&cli.IntFlag{Name: "keep", Usage: "keep only the newest N dead letters (0 deletes them all)"},
					&cli.BoolFlag{Name: "all", Usage: "delete every dead letter of the type"},
					&cli.IntFlag{Name: "limit", Value: 10_000, Usage: "most dead letters deleted by this run"},
					yesFlag,
					outputFlag(false),
				},
				Action: a.deadPurge,
			},
		},
	}
}

func (a *app) deadList(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", limit)
	}
	after := quick.Cursor(c.String("after")) // ListDead checks it is one of its own
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	t := c.String("type")
	if err := checkTypes(c.Context, q, t); err != nil {
		return err
	}
	page, err := q.ListDead(c.Context, quick.ListDeadOptions{TaskType: t, Limit: limit, After: after})
	if errors.Is(err, quick.ErrInvalidCursor) {
		return fmt.Errorf("invalid --after %q: not a cursor printed by dead list for this type: %w", after, err)
	}
	if err != nil {
		return err
	}
	total, err := q.DeadCount(c.Context, t)
	if err != nil {
		return err
	}
	next := ""
	if page.Next != "" {
		next = string(page.Next)
	}
	if f == formatJSON {
		out := struct {
			Total int64     `json:"total"`
			Jobs  []jobJSON `json:"jobs"`
			Next  string    `json:"next,omitempty"`
		}{Total: total, Jobs: []jobJSON{}, Next: next}
		for _, j := range page.Jobs {
			out.Jobs = append(out.Jobs, toJobJSON(j, true))
		}
		return writeJSON(a.d.Stdout, out)
	}
	if len(page.Jobs) == 0 {
		fmt.Fprintf(a.d.Stdout, "no dead %s jobs\n", t)
		return nil
	}
	now := a.now()
	tw := newTable(a.d.Stdout)
	row(tw, "ID", "PRIORITY", "DIED", "ATTEMPTS", "PAYLOAD", "LAST ERROR")
	for _, j := range page.Jobs {
		row(tw, j.ID, j.Priority, fmtRel(j.DeadAt, now), attempts(j), fmt.Sprintf("%dB", len(j.Payload)), dash(oneLine(j.LastError, 60)))
	}
	tw.Flush()
	fmt.Fprintf(a.d.Stdout, "%d of %d dead %s jobs", len(page.Jobs), total, t)
	if next != "" {
		fmt.Fprintf(a.d.Stdout, "; more: quick dead list --type %s --after %s", t, next)
	}
	fmt.Fprintln(a.d.Stdout)
	return nil
}

func (a *app) deadPurge(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	t := c.String("type")
	var ret quick.Retention
	var what string
	switch {
	case c.Bool("all") || (c.IsSet("keep") && c.Int("keep") == 0):
		if c.IsSet("older-than") {
			return errors.New("--all (or --keep 0) with --older-than: --all already deletes everything")
		}
		// Retention has no "keep none": any age above zero bounds every
		// dead letter made before this instant.
		ret.MaxAge = time.Nanosecond
		what = "every dead letter"
	default:
		if c.Int("keep") < 0 {
			return fmt.Errorf("invalid --keep %d: want 0 or more", c.Int("keep"))
		}
		if c.Duration("older-than") < 0 {
			return fmt.Errorf("invalid --older-than %v: want a positive duration", c.Duration("older-than"))
		}
		ret.MaxAge, ret.MaxCount = c.Duration("older-than"), c.Int("keep")
		switch {
		case ret.MaxAge > 0 && ret.MaxCount > 0:
			what = fmt.Sprintf("the dead letters older than %v or beyond the newest %d", ret.MaxAge, ret.MaxCount)
		case ret.MaxAge > 0:
			what = fmt.Sprintf("the dead letters older than %v", ret.MaxAge)
		case ret.MaxCount > 0:
			what = fmt.Sprintf("the dead letters beyond the newest %d", ret.MaxCount)
		default:
			return errors.New("dead purge needs --older-than D, --keep N or --all")
		}
	}
	limit := c.Int("limit")
	if limit <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", limit)
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	if err := checkTypes(c.Context, q, t); err != nil {
		return err
	}
	total, err := q.DeadCount(c.Context, t)
	if err != nil {
		return err
	}
	if total == 0 {
		if f == formatJSON {
			return writeJSON(a.d.Stdout, map[string]any{"task_type": t, "purged": 0, "remaining": 0})
		}
		fmt.Fprintf(a.d.Stdout, "no dead %s jobs: nothing to purge\n", t)
		return nil
	}
	if err := a.confirm(c, fmt.Sprintf("Delete %s of type %s (%d dead now), with their payloads?", what, t, total)); err != nil {
		return err
	}
	n, err := q.PurgeDead(c.Context, t, ret, limit)
	if err != nil {
		return err
	}
	left, err := q.DeadCount(c.Context, t)
	if err != nil {
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"task_type": t, "purged": n, "remaining": left})
	}
	fmt.Fprintf(a.d.Stdout, "purged %d dead %s jobs; %d remain\n", n, t, left)
	return nil
}
