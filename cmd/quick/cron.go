package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/quick"
)

func (a *app) cronCommand() *cli.Command {
	return &cli.Command{
		Name:   "cron",
		Usage:  "list, add, remove and repair cron schedules",
		Action: unknownCommand,
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "list schedules and where each chain stands",
				Flags:  []cli.Flag{outputFlag(false)},
				Action: a.cronList,
			},
			{
				Name:  "add",
				Usage: "create or replace a schedule (idempotent: an unchanged one writes nothing)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Required: true, Usage: "schedule name; adding the same name again replaces it"},
					&cli.StringFlag{Name: "spec", Required: true, Usage: `cron spec: "*/5 * * * *", 6 fields with seconds, or @hourly, @daily, "@every 10m"`},
					typeFlag(),
					&cli.StringFlag{Name: "tz", Usage: "IANA time zone the spec is read in (default UTC)"},
					&cli.StringFlag{Name: "payload", Aliases: []string{"p"}, Usage: "payload handed to every run"},
					&cli.StringFlag{Name: "priority", Value: "normal", Usage: "high, normal or low"},
					&cli.IntFlag{Name: "max-attempts", Usage: "runs of one occurrence before it is dead-lettered (0: the queue's default)"},
					&cli.StringFlag{Name: "missed", Value: "run-once", Usage: "times missed while a run was late: run-once (run the latest once) or skip-all"},
					outputFlag(false),
				},
				Action: a.cronAdd,
			},
			{
				Name:      "remove",
				Usage:     "delete a schedule and cancel its pending run (asks for confirmation)",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{yesFlag, outputFlag(false)},
				Action:    a.cronRemove,
			},
			{
				Name:   "repair",
				Usage:  "restart the chains of schedules that have no pending run",
				Flags:  []cli.Flag{outputFlag(false)},
				Action: a.cronRepair,
			},
		},
	}
}

type cronJSON struct {
	Name        string     `json:"name"`
	Spec        string     `json:"spec"`
	TimeZone    string     `json:"time_zone,omitempty"`
	TaskType    string     `json:"task_type"`
	Priority    string     `json:"priority,omitempty"`
	MaxAttempts int        `json:"max_attempts,omitempty"`
	MissedRuns  string     `json:"missed_runs"`
	PayloadSize int        `json:"payload_bytes"`
	Alive       bool       `json:"alive"`
	Next        *time.Time `json:"next,omitempty"`
	NextID      string     `json:"next_id,omitempty"`
	State       string     `json:"state,omitempty"`
	Error       string     `json:"error,omitempty"`
}

func toCronJSON(e cron.Entry) cronJSON {
	out := cronJSON{
		Name: e.Name, Spec: e.Spec, TimeZone: e.TimeZone, TaskType: e.TaskType, Priority: prioString(e.Priority),
		MaxAttempts: e.MaxAttempts, MissedRuns: e.MissedRuns.String(), PayloadSize: len(e.Payload),
		Alive: e.Alive, Next: timePtr(e.Next),
	}
	if e.Alive {
		out.NextID, out.State = e.NextID.String(), e.State.String()
	}
	if e.Err != nil {
		out.Error = e.Err.Error()
	}
	return out
}

func (a *app) cronList(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	es, err := cron.List(c.Context, q)
	if err != nil {
		return err
	}
	if f == formatJSON {
		out := []cronJSON{}
		for _, e := range es {
			out = append(out, toCronJSON(e))
		}
		return writeJSON(a.d.Stdout, struct {
			Schedules []cronJSON `json:"schedules"`
		}{out})
	}
	if len(es) == 0 {
		fmt.Fprintln(a.d.Stdout, "no cron schedules")
		return nil
	}
	now := a.now()
	tw := newTable(a.d.Stdout)
	row(tw, "NAME", "SPEC", "TZ", "TASK TYPE", "NEXT RUN", "STATE", "CHAIN")
	for _, e := range es {
		next, state, chain := "-", "-", "ok"
		if e.Alive {
			next = fmt.Sprintf("%s (%s)", fmtTime(e.Next), fmtRel(e.Next, now))
			state = e.State.String()
		} else {
			chain = "broken: run `quick cron repair`"
		}
		if e.Err != nil {
			chain = "error: " + oneLine(e.Err.Error(), 60)
		}
		tz := e.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		row(tw, e.Name, e.Spec, tz, e.TaskType, next, state, chain)
	}
	return tw.Flush()
}

func (a *app) cronAdd(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	prio, err := quick.ParsePriority(c.String("priority"))
	if err != nil {
		return err
	}
	if err := checkMaxAttempts(c.Int("max-attempts")); err != nil {
		return err
	}
	var missed cron.MissedRuns
	switch m := c.String("missed"); m {
	case "run-once":
		missed = cron.RunOnce
	case "skip-all":
		missed = cron.SkipAll
	default:
		return fmt.Errorf("invalid --missed %q (want run-once or skip-all)", m)
	}
	s := cron.Schedule{
		Name: c.String("name"), Spec: c.String("spec"), TimeZone: c.String("tz"), TaskType: c.String("type"),
		Priority: prio, MaxAttempts: c.Int("max-attempts"), MissedRuns: missed,
	}
	if c.IsSet("payload") {
		s.Payload = []byte(c.String("payload"))
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	if err := cron.Register(c.Context, q, s); err != nil {
		return err
	}
	es, err := cron.List(c.Context, q)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Name != s.Name {
			continue
		}
		if f == formatJSON {
			return writeJSON(a.d.Stdout, toCronJSON(e))
		}
		fmt.Fprintf(a.d.Stdout, "schedule %s (%s, task type %s) registered; next run %s\n", e.Name, e.Spec, e.TaskType, whenRuns(e.Next, a.now()))
		return nil
	}
	return fmt.Errorf("schedule %s was registered but is no longer listed (removed meanwhile?)", s.Name)
}

func (a *app) cronRemove(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return newUsageError(c, fmt.Errorf("quick cron remove needs one schedule name argument, got %d", c.NArg()))
	}
	name := c.Args().First()
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	es, err := cron.List(c.Context, q)
	if err != nil {
		return err
	}
	var found *cron.Entry
	for i := range es {
		if es[i].Name == name {
			found = &es[i]
		}
	}
	if found == nil {
		return fmt.Errorf("%w: %q (see quick cron list)", cron.ErrNotFound, name)
	}
	what := fmt.Sprintf("Remove schedule %s (%s, task type %s)?", name, found.Spec, found.TaskType)
	if found.Alive && found.State == quick.StateLeased {
		what += " Its running occurrence finishes and schedules nothing more."
	} else if found.Alive {
		what += fmt.Sprintf(" Its next run (%s) is cancelled.", fmtTime(found.Next))
	}
	if err := a.confirm(c, what); err != nil {
		return err
	}
	if err := cron.Remove(c.Context, q, name); err != nil {
		if errors.Is(err, cron.ErrNotFound) {
			return fmt.Errorf("schedule %q was removed meanwhile: %w", name, err)
		}
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"name": name, "removed": true})
	}
	fmt.Fprintf(a.d.Stdout, "removed schedule %s\n", name)
	return nil
}

func (a *app) cronRepair(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	n, err := cron.Repair(c.Context, q)
	if err != nil {
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"restored": n})
	}
	fmt.Fprintf(a.d.Stdout, "restored %d broken schedule chains\n", n)
	return nil
}
