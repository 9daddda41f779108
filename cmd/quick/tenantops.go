package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Moving, adopting and deleting a tenant: quick tenants move/adopt/delete/ops
// (quick/move.go, adopt.go, tenant_delete.go). The CLI opens queues with
// the default placement of zones (S (2, "z", tenant, type)); a queue whose
// Options.ZoneSpace places them elsewhere is moved with the Go API.

func (a *app) tenantOpsCommands() []*cli.Command {
	tenantFlag := &cli.StringFlag{Name: "tenant", Usage: "tenant (item space); \"\" is the no-tenant zone", Required: true}
	typeFlag := &cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type; default every known task type"}
	batchFlag := &cli.IntFlag{Name: "batch", Value: 256, Usage: "jobs per transaction (1 to 1000)"}
	dryRun := &cli.BoolFlag{Name: "dry-run", Usage: "show the zones and what they hold; change nothing"}
	return []*cli.Command{
		{
			Name:  "move",
			Usage: "move a tenant's zones with their jobs to another queue (another subspace, or another cluster) while workers run",
			Description: "Fences the tenant's zones (no claim takes their jobs), copies the jobs in batches, makes them claimable\n" +
				"at the destination, deletes them at the source. Jobs leased when it starts run at most once more, at the\n" +
				"destination. Route the tenant's enqueues and workers to the destination. A move stopped half way\n" +
				"(a crash, ^C) is carried on by running the same command again (quick tenants ops lists them).",
			Flags: []cli.Flag{tenantFlag, typeFlag, batchFlag, dryRun, yesFlag,
				&cli.StringFlag{Name: "to-subspace", Usage: "the destination queue's subspace (tuple, as --subspace); default the source's"},
				&cli.StringFlag{Name: "to-cluster-file", Usage: "the destination cluster's file (another FoundationDB cluster); default the source's database"},
			},
			Action: a.tenantsMove,
		},
		{
			Name:   "adopt",
			Usage:  "make a tenant's zones copied into this queue by other tools claimable: rebuild pointers, lookup index, unique keys",
			Flags:  []cli.Flag{tenantFlag, typeFlag, batchFlag, dryRun},
			Action: a.tenantsAdopt,
		},
		{
			Name:   "delete",
			Usage:  "delete a tenant's zones with their jobs, pointers, lookup index entries, unique keys and limits",
			Flags:  []cli.Flag{tenantFlag, typeFlag, batchFlag, dryRun, yesFlag},
			Action: a.tenantsDelete,
		},
		{
			Name:  "ops",
			Usage: "the tenant moves, adoptions and deletions under way (or left by a crash: run the same command again)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "cancel-tenant", Usage: "forget the operation of this tenant (with --type); its fence lapses by itself"},
				&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type of --cancel-tenant"},
			},
			Action: a.tenantsOps,
		},
	}
}

func batchArg(c *cli.Context) (int, error) {
	b := c.Int("batch")
	if b < 1 || b > 1000 {
		return 0, fmt.Errorf("invalid --batch %d: want 1 to 1000 jobs", b)
	}
	return b, nil
}

// tenantTypesArg is the task types a command covers: --type, or every
// known one.
func tenantTypesArg(c *cli.Context, q *quick.Queue) ([]string, error) {
	if t := c.String("type"); t != "" {
		return []string{t}, nil
	}
	return q.TaskTypes(c.Context)
}

// dryRunZones prints each zone of the tenant with its lanes and jobs.
func (a *app) dryRunZones(c *cli.Context, q *quick.Queue, tenant, what string) error {
	types, err := tenantTypesArg(c, q)
	if err != nil {
		return err
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TYPE", "LANES", "READY", "LEASED", "SCHEDULED")
	for _, t := range types {
		info, err := q.ZoneInfo(c.Context, t, tenant)
		if err != nil {
			return err
		}
		var ready, leased, sched int
		exact := true
		for _, l := range info.LaneStates {
			ready, leased, sched = ready+l.ReadyJobs, leased+l.LeasedJobs, sched+l.ScheduledJobs
			exact = exact && l.Exact
		}
		more := ""
		if !exact {
			more = "≥"
		}
		row(tw, t, fmt.Sprint(len(info.LaneStates)), more+fmt.Sprint(ready), more+fmt.Sprint(leased), more+fmt.Sprint(sched))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.d.Stdout, "dry run: would %s tenant %s; nothing changed\n", what, tenantCell(tenant))
	return nil
}

func (a *app) progress(c *cli.Context, verb string) func(quick.TenantProgress) {
	return func(p quick.TenantProgress) {
		fmt.Fprintf(a.d.Stderr, "%s %s: %s, %d jobs\n", verb, p.TaskType, p.Step, p.Done)
	}
}

func (a *app) tenantsMove(c *cli.Context) error {
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	tenant := c.String("tenant")
	batch, err := batchArg(c)
	if err != nil {
		return err
	}
	to, where, err := a.destQueue(c, q)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return a.dryRunZones(c, q, tenant, "move to "+where+" the zones of")
	}
	if err := a.confirm(c, fmt.Sprintf("Move tenant %s to %s?", tenantCell(tenant), where)); err != nil {
		return err
	}
	res, err := q.MoveTenant(c.Context, tenant, to, quick.MoveOptions{TaskType: c.String("type"), Batch: batch, Progress: a.progress(c, "move")})
	if err != nil {
		return fmt.Errorf("%w (run the same command again to carry on)", err)
	}
	fmt.Fprintf(a.d.Stdout, "moved tenant %s to %s: %d jobs of %d task types%s\n", tenantCell(tenant), where, res.Jobs, len(res.TaskTypes), resumedNote(res))
	return nil
}

func resumedNote(res quick.TenantResult) string {
	if res.Resumed {
		return " (carried on an operation left unfinished)"
	}
	return ""
}

// destQueue opens the queue of --to-subspace in --to-cluster-file's
// database (or the source's).
func (a *app) destQueue(c *cli.Context, src *quick.Queue) (*quick.Queue, string, error) {
	sub, file := c.String("to-subspace"), c.String("to-cluster-file")
	if sub == "" && file == "" {
		return nil, "", errors.New("move needs a destination: --to-subspace, --to-cluster-file, or both")
	}
	space := src.Subspace()
	where := "subspace " + sub
	if sub != "" {
		t, err := parseSubspace(sub)
		if err != nil {
			return nil, "", fmt.Errorf("--to-subspace: %w", err)
		}
		space = tuple.FromTuple(t)
	} else {
		where = "the same subspace"
	}
	db := src.DB()
	if file != "" {
		if !a.d.FDBBuilt || a.d.OpenFDB == nil {
			return nil, "", fmt.Errorf("--to-cluster-file %s: this quick binary was built without FoundationDB support (go build -tags fdb ./cmd/quick)", file)
		}
		other, err := a.d.OpenFDB(file)
		if err != nil {
			return nil, "", fmt.Errorf("open the destination cluster %s: %w", file, err)
		}
		db = kv.WithCounters(other)
		where += " of cluster " + file
	}
	to, err := quick.Open(c.Context, db, space, quick.Options{
		Clock:  a.d.Clock,
		Logger: slog.New(slog.NewTextHandler(a.d.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, "", fmt.Errorf("open the destination queue: %w", err)
	}
	return to, where, nil
}

func (a *app) tenantsAdopt(c *cli.Context) error {
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	tenant := c.String("tenant")
	batch, err := batchArg(c)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return a.dryRunZones(c, q, tenant, "adopt the zones of")
	}
	res, err := q.AdoptTenant(c.Context, tenant, quick.AdoptOptions{TaskType: c.String("type"), Batch: batch, Progress: a.progress(c, "adopt")})
	if err != nil {
		return fmt.Errorf("%w (run the same command again to carry on)", err)
	}
	fmt.Fprintf(a.d.Stdout, "adopted tenant %s: %d jobs of %d task types are claimable%s\n", tenantCell(tenant), res.Jobs, len(res.TaskTypes), resumedNote(res))
	return nil
}

func (a *app) tenantsDelete(c *cli.Context) error {
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	tenant := c.String("tenant")
	batch, err := batchArg(c)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return a.dryRunZones(c, q, tenant, "delete the zones of")
	}
	if err := a.confirm(c, fmt.Sprintf("Delete tenant %s with all its jobs?", tenantCell(tenant))); err != nil {
		return err
	}
	res, err := q.DeleteTenant(c.Context, tenant, quick.DeleteOptions{TaskType: c.String("type"), Batch: batch, Progress: a.progress(c, "delete")})
	if err != nil {
		return fmt.Errorf("%w (run the same command again to carry on)", err)
	}
	fmt.Fprintf(a.d.Stdout, "deleted tenant %s: %d jobs of %d task types%s\n", tenantCell(tenant), res.Jobs, len(res.TaskTypes), resumedNote(res))
	return nil
}

func (a *app) tenantsOps(c *cli.Context) error {
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	if c.IsSet("cancel-tenant") {
		if c.String("type") == "" {
			return errors.New("--cancel-tenant needs --type")
		}
		if err := q.CancelTenantOp(c.Context, c.String("cancel-tenant"), c.String("type")); err != nil {
			return err
		}
		fmt.Fprintf(a.d.Stdout, "forgot the operation on tenant %s of %s\n", tenantCell(c.String("cancel-tenant")), c.String("type"))
		return nil
	}
	ops, err := q.TenantOps(c.Context, 1000)
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		fmt.Fprintln(a.d.Stdout, "no tenant operation under way")
		return nil
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TENANT", "TYPE", "OPERATION", "STEP", "JOBS")
	for _, o := range ops {
		if o.Corrupt {
			row(tw, tenantCell(o.ItemSpace), o.TaskType, "(corrupt record)", "", "")
			continue
		}
		row(tw, tenantCell(o.ItemSpace), o.TaskType, o.Kind, o.Step, fmt.Sprint(o.Done))
	}
	return tw.Flush()
}
