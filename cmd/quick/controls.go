package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
)

// The queue controls: pause and resume a task type, run a scheduled job
// now, wait for a job, and cancel or requeue by filter.

func (a *app) pauseCommand() *cli.Command {
	return &cli.Command{
		Name:      "pause",
		Usage:     "stop workers claiming a task type (running jobs finish); with no argument, list paused types",
		ArgsUsage: "[TYPE]",
		Flags:     []cli.Flag{outputFlag(false)},
		Action:    func(c *cli.Context) error { return a.pauseResume(c, true) },
	}
}

func (a *app) resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "let workers claim a paused task type again",
		ArgsUsage: "TYPE",
		Flags:     []cli.Flag{outputFlag(false)},
		Action:    func(c *cli.Context) error { return a.pauseResume(c, false) },
	}
}

func (a *app) pauseResume(c *cli.Context, pause bool) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	if c.NArg() == 0 && pause {
		return a.listPaused(c, q, f)
	}
	if c.NArg() != 1 {
		return newUsageError(c, fmt.Errorf("%s needs one task type argument, got %d", commandPath(c), c.NArg()))
	}
	t := c.Args().First()
	if err := checkTypes(c.Context, q, t); err != nil {
		return err
	}
	verb := "resumed"
	if pause {
		verb = "paused"
		err = q.Pause(c.Context, t)
	} else {
		err = q.Resume(c.Context, t)
	}
	if err != nil {
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"task_type": t, "paused": pause})
	}
	if pause {
		fmt.Fprintf(a.d.Stdout, "paused %s: workers stop claiming it within one heartbeat; running jobs finish (quick resume %s)\n", t, t)
	} else {
		fmt.Fprintf(a.d.Stdout, "%s %s: workers claim it again within one heartbeat\n", verb, t)
	}
	return nil
}

func (a *app) listPaused(c *cli.Context, q *quick.Queue, f format) error {
	paused, err := q.PausedTypes(c.Context)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(paused))
	for t := range paused {
		names = append(names, t)
	}
	sort.Strings(names)
	if f == formatJSON {
		type row struct {
			TaskType string    `json:"task_type"`
			Since    time.Time `json:"since"`
		}
		out := struct {
			Paused []row `json:"paused"`
		}{Paused: []row{}}
		for _, t := range names {
			out.Paused = append(out.Paused, row{t, paused[t].UTC()})
		}
		return writeJSON(a.d.Stdout, out)
	}
	if len(names) == 0 {
		fmt.Fprintln(a.d.Stdout, "no task type is paused")
		return nil
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TASK TYPE", "PAUSED SINCE")
	for _, t := range names {
		row(tw, t, fmt.Sprintf("%s (%s)", fmtTime(paused[t]), fmtRel(paused[t], a.now())))
	}
	return tw.Flush()
}

func (a *app) jobsRunNow(c *cli.Context) error {
	f, q, j, err := a.jobFromArg(c)
	if err != nil {
		return err
	}
	switch j.State {
	case quick.StateScheduled:
	case quick.StateReady:
		return fmt.Errorf("job %s is already ready: a worker will take it", j.ID)
	case quick.StateDead:
		return fmt.Errorf("job %s is dead: `quick dead requeue %s` runs it again", j.ID, j.ID)
	default:
		return fmt.Errorf("job %s is %s: only a scheduled job can run now", j.ID, j.State)
	}
	if err := q.RunNow(c.Context, j.ID); err != nil {
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"id": j.ID.String(), "ran_now": true, "was_run_at": j.RunAt.UTC()})
	}
	fmt.Fprintf(a.d.Stdout, "job %s (%s) runs now instead of %s\n", j.ID, j.TaskType, fmtTime(j.RunAt))
	return nil
}

func (a *app) jobsWait(c *cli.Context) error {
	id, err := jobArg(c)
	if err != nil {
		return err
	}
	if d := c.Duration("timeout"); d < 0 {
		return fmt.Errorf("invalid --timeout %v: want a positive duration (none: wait until interrupted)", d)
	}
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	if d := c.Duration("timeout"); d > 0 {
		var cancel func()
		ctx, cancel = contextWithTimeout(ctx, a, d)
		defer cancel()
	}
	o, err := q.Wait(ctx, id)
	if err != nil {
		switch {
		case c.Context.Err() != nil:
			return fmt.Errorf("wait for job %s %w (Ctrl-C)", id, errInterrupted)
		case ctx.Err() != nil:
			return fmt.Errorf("job %s has not finished after --timeout %v", id, c.Duration("timeout"))
		}
		return err
	}
	if f == formatJSON {
		if err := writeJSON(a.d.Stdout, outcomeJSON(o)); err != nil {
			return err
		}
	} else {
		a.printOutcome(o)
	}
	if o.Kind != quick.OutcomeCompleted {
		return fmt.Errorf("job %s did not complete: %s", id, o.Kind)
	}
	return nil
}

// contextWithTimeout ends ctx after d on the CLI's clock (a fake one in
// tests).
func contextWithTimeout(ctx context.Context, a *app, d time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.d.Clock.After(d):
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

type outcomeJSONT struct {
	ID         string     `json:"id"`
	Outcome    string     `json:"outcome"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Attempts   int        `json:"attempts"`
	Error      string     `json:"error,omitempty"`
}

func outcomeJSON(o quick.Outcome) outcomeJSONT {
	return outcomeJSONT{ID: o.ID.String(), Outcome: o.Kind.String(), FinishedAt: timePtr(o.FinishedAt), Attempts: o.Attempts, Error: o.Error}
}

func (a *app) printOutcome(o quick.Outcome) {
	switch o.Kind {
	case quick.OutcomeFinished:
		fmt.Fprintf(a.d.Stdout, "job %s finished (its outcome was not recorded: not enqueued waitable, or purged)\n", o.ID)
	default:
		fmt.Fprintf(a.d.Stdout, "job %s %s at %s after %d attempts", o.ID, o.Kind, fmtTime(o.FinishedAt), o.Attempts)
		if o.Error != "" {
			fmt.Fprintf(a.d.Stdout, ": %s", oneLine(o.Error, 200))
		}
		fmt.Fprintln(a.d.Stdout)
	}
}

// filterFlags are the flags that select jobs for `jobs cancel` without an ID.
func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "with no ID: cancel the jobs of this task type that match the filter flags"},
		&cli.StringFlag{Name: "state", Usage: "with --type: only scheduled, ready or leased jobs (default scheduled and ready)"},
		&cli.StringFlag{Name: "item-space", Usage: "with --type: only this tenant's jobs"},
		&cli.StringFlag{Name: "priority", Usage: "with --type: only jobs of this priority"},
		&cli.StringFlag{Name: "unique-prefix", Usage: "with --type: only jobs whose unique key starts with this"},
		&cli.IntFlag{Name: "limit", Value: 10_000, Usage: "with --type: most jobs cancelled"},
	}
}

// jobsCancelFiltered is `quick jobs cancel --type T [filters]`.
func (a *app) jobsCancelFiltered(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	flt := quick.Filter{TaskType: c.String("type"), UniqueKeyPrefix: c.String("unique-prefix")}
	if c.IsSet("item-space") {
		flt.ItemSpaces = []string{c.String("item-space")}
	}
	if err := checkTypes(c.Context, q, flt.TaskType); err != nil {
		return err
	}
	if s := c.String("state"); s != "" {
		if flt.State, err = quick.ParseState(s); err != nil {
			return err
		}
	}
	if s := c.String("priority"); s != "" {
		if flt.Priority, err = quick.ParsePriority(s); err != nil {
			return err
		}
	}
	limit := c.Int("limit")
	if limit <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", limit)
	}
	what := fmt.Sprintf("Cancel up to %d %s jobs", limit, flt.TaskType)
	switch flt.State {
	case 0:
		what += " (scheduled and ready; leased ones only with --state leased)"
	default:
		what += " in state " + flt.State.String()
	}
	if flt.ItemSpaces != nil {
		what += fmt.Sprintf(", item space %q", flt.ItemSpaces[0])
	}
	if flt.Priority != 0 {
		what += ", priority " + flt.Priority.String()
	}
	if flt.UniqueKeyPrefix != "" {
		what += fmt.Sprintf(", unique key starting %q", flt.UniqueKeyPrefix)
	}
	if err := a.confirm(c, what+"? They are deleted with their payloads."); err != nil {
		return err
	}
	// Bounded calls (each at most its scan budget) until the limit or the
	// end of the scan.
	n := 0
	var after quick.Cursor
	for n < limit {
		r, cerr := q.CancelMatching(c.Context, flt, quick.BulkOptions{Limit: limit - n, After: after})
		n += r.Done
		if err = cerr; err != nil || r.Next == "" {
			break
		}
		after = r.Next
	}
	if f == formatJSON && err == nil {
		return writeJSON(a.d.Stdout, map[string]any{"task_type": flt.TaskType, "cancelled": n})
	}
	if err != nil {
		return fmt.Errorf("cancelled %d jobs, then: %w", n, err)
	}
	fmt.Fprintf(a.d.Stdout, "cancelled %d %s jobs (in transactions of at most %d)\n", n, flt.TaskType, quick.BulkBatch)
	return nil
}

// deadRequeueFiltered is `quick dead requeue --type T [filters]`.
func (a *app) deadRequeueFiltered(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	flt := quick.DeadFilter{TaskType: c.String("type"), ErrorContains: c.String("error-contains")}
	if err := checkTypes(c.Context, q, flt.TaskType); err != nil {
		return err
	}
	for _, name := range []string{"died-within", "died-before"} {
		if err := checkNonNegative(name, c.Duration(name)); err != nil {
			return err
		}
	}
	now := a.now()
	if d := c.Duration("died-within"); d > 0 {
		flt.DiedAfter = now.Add(-d)
	}
	if d := c.Duration("died-before"); d > 0 {
		flt.DiedBefore = now.Add(-d)
	}
	limit := c.Int("limit")
	if limit <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", limit)
	}
	n := 0
	var after quick.Cursor
	for n < limit {
		r, rerr := q.RequeueMatching(c.Context, flt, quick.BulkOptions{Limit: limit - n, After: after})
		n += r.Done
		if err = rerr; err != nil || r.Next == "" {
			break
		}
		after = r.Next
	}
	if err != nil {
		return fmt.Errorf("requeued %d dead jobs, then: %w", n, err)
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"task_type": flt.TaskType, "requeued": n})
	}
	fmt.Fprintf(a.d.Stdout, "requeued %d dead %s jobs: they run now with their attempts reset\n", n, flt.TaskType)
	return nil
}
