package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
)

func (a *app) jobsCommand() *cli.Command {
	return &cli.Command{
		Name:   "jobs",
		Usage:  "list, show, cancel and retry jobs",
		Action: unknownCommand,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list a task type's scheduled, ready and leased jobs, in the pointer index's order, or tenant by tenant with --tenant",
				Description: "Each page reads at most 5,000 keys (pointer entries, lane states, job keys) and shows at most --limit\n" +
					"jobs; a page the budget ended may be short, even empty, and still print the command for the next one.",
				Flags: []cli.Flag{
					typeFlag(),
					&cli.StringSliceFlag{Name: "tenant", Usage: "only this tenant's jobs (item space; repeatable; \"\" is the no-tenant zone)"},
					&cli.StringFlag{Name: "state", Aliases: []string{"s"}, Usage: "only jobs in this state: scheduled, ready or leased"},
					&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 50, Usage: "most jobs listed"},
					&cli.StringFlag{Name: "after", Usage: "resume a listing from the cursor the previous page printed"},
					outputFlag(false),
				},
				Action: a.jobsList,
			},
			{
				Name:      "show",
				Usage:     "show one job, with its payload",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{outputFlag(false)},
				Action:    a.jobsShow,
			},
			{
				Name: "cancel",
				Usage: "delete a scheduled, ready or leased job, or a dead letter; or, with --type and no ID, " +
					"the jobs the filter flags select, in batches (asks for confirmation)",
				ArgsUsage: "ID | --type TYPE [filters]",
				Flags:     append([]cli.Flag{yesFlag, outputFlag(false)}, filterFlags()...),
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 && c.IsSet("type") {
						return a.jobsCancelFiltered(c)
					}
					return a.jobsCancel(c)
				},
			},
			{
				Name:      "run-now",
				Usage:     "make a scheduled job run now (keeps its attempts, payload and checkpoint)",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{outputFlag(false)},
				Action:    a.jobsRunNow,
			},
			{
				Name:      "wait",
				Usage:     "wait until a waitable job finishes and print how (exit 0 only if it completed)",
				ArgsUsage: "ID",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", DefaultText: "wait until interrupted"},
					outputFlag(false),
				},
				Action: a.jobsWait,
			},
			{
				Name:      "retry",
				Usage:     "run a dead job again now, attempts reset (same as dead requeue)",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{outputFlag(false)},
				Action:    a.jobsRetry,
			},
		},
	}
}

func typeFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "type", Aliases: []string{"t"}, Required: true, Usage: "task type"}
}

// jobArg parses the single job ID argument.
func jobArg(c *cli.Context) (quick.ID, error) {
	if c.NArg() != 1 {
		return quick.ID{}, newUsageError(c, fmt.Errorf("%s needs one job ID argument, got %d", commandPath(c), c.NArg()))
	}
	id, err := quick.ParseID(c.Args().First())
	if err != nil {
		return quick.ID{}, err
	}
	return id, nil
}

func (a *app) jobsList(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	opts := quick.ListOptions{TaskType: c.String("type"), Limit: c.Int("limit")}
	if opts.Limit <= 0 || opts.Limit > 1000 {
		return fmt.Errorf("invalid --limit %d: want 1 to 1000", opts.Limit)
	}
	if err := checkTypes(c.Context, q, opts.TaskType); err != nil {
		return err
	}
	if c.IsSet("tenant") {
		opts.ItemSpaces = c.StringSlice("tenant")
		if len(opts.ItemSpaces) == 0 {
			opts.ItemSpaces = []string{""}
		}
	}
	if s := c.String("state"); s != "" {
		st, err := quick.ParseState(s)
		if err != nil {
			return err
		}
		if st == quick.StateDead {
			return errors.New("--state dead: dead letters are listed by `quick dead list`")
		}
		if st.Done() {
			return fmt.Errorf("--state %s: finished jobs are not listed; `quick jobs show ID` tells one finished", st)
		}
		opts.State = st
	}
	opts.After = quick.Cursor(c.String("after")) // List checks it is one of its own
	page, err := q.List(c.Context, opts)
	if errors.Is(err, quick.ErrInvalidCursor) {
		return fmt.Errorf("invalid --after %q: not a cursor printed by jobs list for this type: %w", opts.After, err)
	}
	if err != nil {
		return err
	}
	next := ""
	if page.Next != "" {
		next = string(page.Next)
	}
	if f == formatJSON {
		out := struct {
			Jobs []jobJSON `json:"jobs"`
			Next string    `json:"next,omitempty"`
		}{Jobs: []jobJSON{}, Next: next}
		for _, j := range page.Jobs {
			out.Jobs = append(out.Jobs, toJobJSON(j, false))
		}
		return writeJSON(a.d.Stdout, out)
	}
	if len(page.Jobs) == 0 && next == "" {
		fmt.Fprintf(a.d.Stdout, "no %s jobs\n", opts.TaskType)
		return nil
	}
	now := a.now()
	tw := newTable(a.d.Stdout)
	row(tw, "ID", "TENANT", "PRIORITY", "STATE", "LANE", "RUN AT", "ATTEMPT", "HOLDER", "UNIQUE KEY")
	for _, j := range page.Jobs {
		row(tw, j.ID, tenantCell(j.ItemSpace), j.Priority, j.State, j.Lane, fmtRel(j.RunAt, now), attempts(j), dash(j.Holder), dash(oneLine(j.UniqueKey, 30)))
	}
	tw.Flush()
	fmt.Fprintf(a.d.Stdout, "%d jobs", len(page.Jobs))
	if next != "" {
		fmt.Fprintf(a.d.Stdout, "; more: quick jobs list --type %s%s --after %s", opts.TaskType, tenantFlags(opts.ItemSpaces), next)
	}
	fmt.Fprintln(a.d.Stdout)
	return nil
}

// tenantFlags repeats a listing's --tenant flags for its next page.
func tenantFlags(ts []string) string {
	var sb strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&sb, " --tenant %q", t)
	}
	return sb.String()
}

func attempts(j quick.JobInfo) string {
	if j.MaxAttempts > 0 {
		return fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts)
	}
	return strconv.Itoa(j.Attempt)
}

// formatAndQueue reads the output format and opens the queue, the first
// steps of most commands.
func (a *app) formatAndQueue(c *cli.Context) (format, *quick.Queue, error) {
	f, err := outputFormat(c)
	if err != nil {
		return f, nil, err
	}
	q, err := a.queue(c)
	return f, q, err
}

// jobFromArg reads the output format, opens the queue and looks up the job
// named by the command's argument.
func (a *app) jobFromArg(c *cli.Context) (format, *quick.Queue, quick.JobInfo, error) {
	id, err := jobArg(c)
	if err != nil {
		return 0, nil, quick.JobInfo{}, err
	}
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return f, nil, quick.JobInfo{}, err
	}
	j, err := q.Get(c.Context, id)
	if err != nil {
		return f, nil, quick.JobInfo{}, err
	}
	if j.ID.IsZero() {
		j.ID = id
	}
	return f, q, j, nil
}

func (a *app) jobsShow(c *cli.Context) error {
	f, q, j, err := a.jobFromArg(c)
	if err != nil {
		return err
	}
	if j.State == quick.StateFinished {
		// A waitable job's recorded outcome tells completed from cancelled.
		if o, err := q.Outcome(c.Context, j.ID); err == nil && o.Kind != quick.OutcomeFinished {
			if f == formatJSON {
				return writeJSON(a.d.Stdout, outcomeJSON(o))
			}
			a.printOutcome(o)
			return nil
		}
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, toJobJSON(j, true))
	}
	a.showJob(a.d.Stdout, j)
	return nil
}

func (a *app) showJob(w io.Writer, j quick.JobInfo) {
	now := a.now()
	tw := newTable(w)
	row(tw, "id", j.ID)
	if j.State == quick.StateFinished {
		row(tw, "state", "finished (completed or cancelled; its enqueue marker is kept for the idempotency window)")
		tw.Flush()
		return
	}
	row(tw, "task type", j.TaskType)
	row(tw, "state", j.State)
	row(tw, "priority", j.Priority)
	switch j.State {
	case quick.StateDead:
		row(tw, "dead since", fmt.Sprintf("%s (%s)", fmtTime(j.DeadAt), fmtRel(j.DeadAt, now)))
	case quick.StateCompleted, quick.StateCancelled:
		// A retained finished job (quick.TaskTypeOptions.Retain).
		if !j.StartedAt.IsZero() {
			row(tw, "started", fmt.Sprintf("%s (%s)", fmtTime(j.StartedAt), fmtRel(j.StartedAt, now)))
		}
		row(tw, "finished", fmt.Sprintf("%s (%s)", fmtTime(j.FinishedAt), fmtRel(j.FinishedAt, now)))
		row(tw, "kept until", fmt.Sprintf("%s (%s)", fmtTime(j.ExpiresAt), fmtRel(j.ExpiresAt, now)))
	case quick.StateLeased:
		row(tw, "lane", j.Lane)
		row(tw, "lease until", fmt.Sprintf("%s (%s)", fmtTime(j.RunAt), fmtRel(j.RunAt, now)))
		row(tw, "holder", dash(j.Holder))
	default:
		row(tw, "lane", j.Lane)
		row(tw, "run at", fmt.Sprintf("%s (%s)", fmtTime(j.RunAt), fmtRel(j.RunAt, now)))
	}
	row(tw, "attempt", attempts(j))
	row(tw, "created", fmt.Sprintf("%s (%s)", fmtTime(j.CreatedAt), fmtRel(j.CreatedAt, now)))
	row(tw, "unique key", dash(j.UniqueKey))
	row(tw, "item space", dash(j.ItemSpace))
	row(tw, "checkpoint", map[bool]string{true: "yes", false: "no"}[j.HasCheckpoint])
	row(tw, "last error", dash(oneLine(j.LastError, 200)))
	for _, e := range j.Errors {
		row(tw, fmt.Sprintf("error, attempt %d", e.Attempt), fmt.Sprintf("%s: %s", fmtTime(e.At), oneLine(e.Error, 200)))
	}
	switch {
	case j.State.Done() && j.PayloadSize > len(j.Payload):
		row(tw, "payload", fmt.Sprintf("%d bytes, not kept (a finished job keeps up to 1 kB)", j.PayloadSize))
		tw.Flush()
	case len(j.Payload) == 0:
		row(tw, "payload", "(empty)")
		tw.Flush()
	case present.IsText(j.Payload):
		row(tw, "payload", fmt.Sprintf("%d bytes:", len(j.Payload)))
		tw.Flush()
		fmt.Fprintf(w, "%s\n", j.Payload)
	default:
		row(tw, "payload", fmt.Sprintf("%d bytes, binary:", len(j.Payload)))
		tw.Flush()
		io.WriteString(w, hex.Dump(j.Payload[:min(len(j.Payload), 512)]))
		if len(j.Payload) > 512 {
			fmt.Fprintf(w, "... (%d more bytes; --output json has all of it)\n", len(j.Payload)-512)
		}
	}
}

func (a *app) jobsCancel(c *cli.Context) error {
	f, q, j, err := a.jobFromArg(c)
	if err != nil {
		return err
	}
	id := j.ID
	if j.State.Done() {
		return fmt.Errorf("job %s already finished (%s): nothing to cancel", id, j.State)
	}
	what := fmt.Sprintf("Cancel job %s (%s, %s, %s)? It is deleted with its payload.", id, j.TaskType, j.State, j.Priority)
	if j.State == quick.StateLeased {
		what += fmt.Sprintf(" Worker %s holds it; its handler keeps running, but it loses the lease.", dash(j.Holder))
	}
	if name, ok := strings.CutPrefix(j.UniqueKey, cron.UniqueKey("")); ok && j.State != quick.StateDead {
		what += fmt.Sprintf(" It is an occurrence of cron schedule %s: the schedule stops until `quick cron repair` (or a worker's repairer) restarts it.", name)
	}
	if err := a.confirm(c, what); err != nil {
		return err
	}
	if err := q.Cancel(c.Context, id); err != nil {
		return err
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, map[string]any{"id": id.String(), "cancelled": true, "state_before": j.State.String()})
	}
	fmt.Fprintf(a.d.Stdout, "cancelled %s (was %s)\n", id, j.State)
	return nil
}

func (a *app) jobsRetry(c *cli.Context) error {
	id, err := jobArg(c)
	if err != nil {
		return err
	}
	return a.requeue(c, []quick.ID{id})
}

// requeue runs dead jobs again, explaining why any other job cannot be.
func (a *app) requeue(c *cli.Context, ids []quick.ID) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	type result struct {
		ID       string `json:"id"`
		Requeued bool   `json:"requeued"`
	}
	done := []result{}
	for _, id := range ids {
		j, err := q.Get(c.Context, id)
		if err != nil {
			return err
		}
		now := a.now()
		switch j.State {
		case quick.StateDead:
		case quick.StateScheduled:
			return fmt.Errorf("job %s is scheduled for %s (%s): nothing to retry; `quick jobs run-now %s` runs it now",
				id, fmtTime(j.RunAt), fmtRel(j.RunAt, now), id)
		case quick.StateReady:
			return fmt.Errorf("job %s is already ready (vested %s, attempt %s): nothing to retry, a worker will take it", id, fmtRel(j.RunAt, now), attempts(j))
		case quick.StateLeased:
			return fmt.Errorf("job %s is running (leased by %s until %s): nothing to retry", id, dash(j.Holder), fmtTime(j.RunAt))
		case quick.StateFinished, quick.StateCompleted, quick.StateCancelled:
			return fmt.Errorf("job %s already finished (%s): nothing to retry", id, j.State)
		}
		if err := q.Requeue(c.Context, id); err != nil {
			return err
		}
		done = append(done, result{ID: id.String(), Requeued: true})
		if f == formatTable {
			fmt.Fprintf(a.d.Stdout, "requeued %s (%s): runs now with its attempts reset\n", id, j.TaskType)
		}
	}
	if f == formatJSON {
		return writeJSON(a.d.Stdout, struct {
			Jobs []result `json:"jobs"`
		}{done})
	}
	return nil
}

func (a *app) enqueueCommand() *cli.Command {
	return &cli.Command{
		Name:      "enqueue",
		Usage:     "enqueue one job; the payload comes from --payload, --file, or stdin with -",
		ArgsUsage: "[-]",
		Flags: []cli.Flag{
			typeFlag(),
			&cli.StringFlag{Name: "payload", Aliases: []string{"p"}, Usage: "payload text"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the payload from a file (- is stdin)"},
			&cli.DurationFlag{Name: "delay", Aliases: []string{"d"}, Usage: "run after this long (e.g. 30s, 2h; at most ten years)"},
			&cli.TimestampFlag{Name: "at", Layout: time.RFC3339, Usage: "run at this time (RFC 3339, e.g. 2025-01-02T15:04:05Z; from a day ago to ten years ahead)"},
			&cli.StringFlag{Name: "priority", Value: "normal", Usage: "high, normal or low"},
			&cli.StringFlag{Name: "unique", Aliases: []string{"u"}, Usage: "unique key: while a pending or running job holds it, no second job is made"},
			&cli.IntFlag{Name: "max-attempts", Usage: "runs before the job is dead-lettered: 1 to 10000 (0: the queue's default, 25)"},
			&cli.StringFlag{Name: "item-space", Aliases: []string{"tenant"}, Usage: "tenant the job belongs to: its jobs of the type are its zone, a queue of its own"},
			&cli.BoolFlag{Name: "waitable", Usage: "record the job's outcome when it finishes, for quick jobs wait (one more key per job)"},
			outputFlag(false),
		},
		Action: a.enqueue,
	}
}

func (a *app) enqueue(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	prio, err := quick.ParsePriority(c.String("priority"))
	if err != nil {
		return err
	}
	payload, err := a.payload(c)
	if err != nil {
		return err
	}
	if err := checkMaxAttempts(c.Int("max-attempts")); err != nil {
		return err
	}
	if err := checkDelay(c.Duration("delay")); err != nil {
		return err
	}
	if c.IsSet("delay") && c.IsSet("at") {
		return errors.New("--delay and --at both given: choose one")
	}
	if at := c.Timestamp("at"); at != nil {
		if err := checkRunAt(a.now(), *at); err != nil {
			return err
		}
	}
	job := quick.NewJob{
		TaskType: c.String("type"), Payload: payload, Priority: prio, Delay: c.Duration("delay"),
		UniqueKey: c.String("unique"), MaxAttempts: c.Int("max-attempts"), ItemSpace: c.String("item-space"),
		Waitable: c.Bool("waitable"),
	}
	if at := c.Timestamp("at"); at != nil {
		job.RunAt = *at
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	res, err := q.Enqueue(c.Context, job)
	if err != nil {
		return err
	}
	e := res[0]
	if f == formatJSON {
		return writeJSON(a.d.Stdout, struct {
			ID        string     `json:"id"`
			Duplicate bool       `json:"duplicate"`
			RunAt     *time.Time `json:"run_at,omitempty"`
		}{e.ID.String(), e.Duplicate, timePtr(e.RunAt)})
	}
	if e.Duplicate {
		fmt.Fprintf(a.d.Stdout, "not enqueued: unique key %q is held by job %s\n", job.UniqueKey, e.ID)
		return nil
	}
	fmt.Fprintf(a.d.Stdout, "enqueued %s (%s, %s), runs %s\n", e.ID, job.TaskType, prio, whenRuns(e.RunAt, a.now()))
	return nil
}

func whenRuns(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return fmt.Sprintf("at %s (%s)", fmtTime(t), fmtRel(t, now))
}

// payload reads the job's payload from exactly one source, refusing more
// than the queue accepts before reading it all.
func (a *app) payload(c *cli.Context) ([]byte, error) {
	var sources []string
	if c.IsSet("payload") {
		sources = append(sources, "--payload")
	}
	if c.IsSet("file") {
		sources = append(sources, "--file")
	}
	stdin := false
	switch {
	case c.NArg() == 1 && c.Args().First() == "-":
		stdin = true
		sources = append(sources, "stdin (-)")
	case c.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q (the payload is --payload TEXT, --file PATH, or - for stdin)", c.Args().First())
	}
	if len(sources) > 1 {
		return nil, fmt.Errorf("payload given twice (%s and %s): choose one source", sources[0], sources[1])
	}
	var r io.Reader
	var name string
	switch {
	case c.IsSet("payload"):
		p := []byte(c.String("payload"))
		if len(p) > quick.MaxPayloadSize {
			return nil, tooLarge("--payload")
		}
		return p, nil
	case stdin || c.String("file") == "-":
		r, name = a.d.Stdin, "stdin"
	case c.IsSet("file"):
		fh, err := os.Open(c.String("file"))
		if err != nil {
			return nil, fmt.Errorf("read the payload: %w", err)
		}
		defer fh.Close()
		r, name = fh, c.String("file")
	default:
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, quick.MaxPayloadSize+1))
	if err != nil {
		return nil, fmt.Errorf("read the payload from %s: %w", name, err)
	}
	if len(b) > quick.MaxPayloadSize {
		return nil, tooLarge(name)
	}
	return b, nil
}

func tooLarge(src string) error {
	return fmt.Errorf("payload from %s is too large: over %d bytes, the most a job holds (quick.MaxPayloadSize); store large data elsewhere and enqueue its key",
		src, quick.MaxPayloadSize)
}
