package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// The inspection of tenants' zones: the pointer index, the tenants with the
// most ready work, one tenant's queue. Every command is bounded by its
// flags, whatever the number of tenants or the backlog.

func (a *app) zonesCommand() *cli.Command {
	return &cli.Command{
		Name:  "zones",
		Usage: "the pointer index: per task type, each lane of a tenant's zone that holds jobs, by when it next has work",
		Description: "One entry per lane of a zone (a tenant's queue of a task type) that holds jobs, in the index's order:\n" +
			"priority, then next vesting time (to the second once vested; workers take the oldest second first,\n" +
			"starting at a random place in it), then a hash of tenant and lane. LEASED BY shows the worker holding the lane and until when.\n" +
			"Cost: one range read of --limit entries and one point read per entry, per task type.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 50, Usage: "most entries shown per type (at most 1000)"},
			&cli.StringFlag{Name: "after", Usage: "resume a listing from the cursor the previous page printed (with one --type)"},
			outputFlag(false),
		}, watchFlags()...),
		Action: a.zones,
	}
}

// pointerRow is one pointer index entry in JSON output.
type pointerRow struct {
	Priority    string     `json:"priority"`
	ItemSpace   string     `json:"item_space"`
	Lane        int        `json:"lane"`
	NextVest    *time.Time `json:"next_vest"`
	Vested      bool       `json:"vested"`
	LeasedBy    string     `json:"leased_by,omitempty"`
	LeasedUntil *time.Time `json:"leased_until,omitempty"`
	Short       bool       `json:"short,omitempty"`
	Stale       bool       `json:"stale,omitempty"`
}

// pointerReport is one task type's page of the pointer index.
type pointerReport struct {
	TaskType string       `json:"task_type"`
	Pointers []pointerRow `json:"pointers"`
	Next     string       `json:"next,omitempty"`
}

func (a *app) zones(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", limit)
	}
	asked := c.StringSlice("type")
	after := quick.Cursor(c.String("after"))
	if after != "" && len(asked) != 1 {
		return errors.New("--after resumes one task type's listing: give exactly one --type")
	}
	if err := checkTypes(c.Context, q, asked...); err != nil {
		return err
	}
	return a.watch(c, "zones", func(w io.Writer) error {
		reps, err := pointerReports(c.Context, q, asked, limit, after)
		if err != nil {
			return err
		}
		if f == formatJSON {
			return writeJSON(w, struct {
				Types []pointerReport `json:"types"`
			}{reps})
		}
		renderPointers(w, reps, a.now())
		return nil
	})
}

func pointerReports(ctx context.Context, q *quick.Queue, asked []string, limit int, after quick.Cursor) ([]pointerReport, error) {
	types, err := taskTypes(ctx, q, asked)
	if err != nil {
		return nil, err
	}
	reps := make([]pointerReport, 0, len(types))
	for _, t := range types {
		page, err := q.Pointers(ctx, quick.PointersOptions{TaskType: t, Limit: limit, Cursor: after})
		if errors.Is(err, quick.ErrInvalidCursor) {
			return nil, fmt.Errorf("invalid --after %q: not a cursor printed by quick zones for this type: %w", after, err)
		}
		if err != nil {
			return nil, err
		}
		rep := pointerReport{TaskType: t, Pointers: []pointerRow{}, Next: string(page.Next)}
		for _, p := range page.Pointers {
			rep.Pointers = append(rep.Pointers, pointerRow{
				Priority: p.Priority.String(), ItemSpace: p.ItemSpace, Lane: p.Lane, NextVest: timePtr(p.NextVest),
				Vested: p.Vested, LeasedBy: p.Holder, LeasedUntil: timePtr(p.LeasedUntil), Short: p.Short, Stale: p.Stale,
			})
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

func renderPointers(w io.Writer, reps []pointerReport, now time.Time) {
	if len(reps) == 0 {
		fmt.Fprintln(w, "no task types yet: nothing was ever enqueued in this queue")
		return
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(rep.Pointers) == 0 {
			fmt.Fprintf(w, "%s  no zone holds jobs\n", rep.TaskType)
			continue
		}
		fmt.Fprintf(w, "%s  pointer index\n", rep.TaskType)
		tw := newTable(w)
		row(tw, "  PRIORITY", "TENANT", "LANE", "NEXT WORK", "LEASED BY", "UNTIL")
		for _, p := range rep.Pointers {
			next := fmtRel(*p.NextVest, now)
			if p.Stale {
				next += " (stale)"
			}
			until := "-"
			if p.LeasedUntil != nil {
				until = fmtRel(*p.LeasedUntil, now)
			}
			holder := dash(p.LeasedBy)
			if p.Short {
				holder += " (short jobs)"
			}
			row(tw, "  "+p.Priority, tenantCell(p.ItemSpace), p.Lane, next, holder, until)
		}
		tw.Flush()
		if rep.Next != "" {
			fmt.Fprintf(w, "  more: quick zones --type %s --after %s\n", rep.TaskType, rep.Next)
		}
	}
}

// tenantCell shows an item space, or "(none)" for jobs without a tenant.
func tenantCell(s string) string {
	if s == "" {
		return "(none)"
	}
	return oneLine(s, 40)
}

func (a *app) tenantsCommand() *cli.Command {
	return &cli.Command{
		Name:  "tenants",
		Usage: "per task type, the tenants with the most ready work: their ready, leased and scheduled jobs, oldest ready job, lanes holding jobs, running jobs against their concurrency limit and jobs started a second",
		Description: "Counts each tenant's zone of the type (its queue), the tenants found through the pointer index (every\n" +
			"lane holding jobs has an entry), at most --budget keys per type: no per-tenant counter exists (it\n" +
			"would cost a write per job). A count shown as ≥N hit the budget; \"more tenants not read\" says the\n" +
			"budget ended before every tenant was. quick lanes --type T --tenant X shows one tenant's lanes.\n" +
			"RUNNING/LIMIT is the jobs holding a slot of the tenant's concurrency limit against it (- without one);\n" +
			"STARTS/S the jobs it started a second over the last minute, as the workers count them (two point\n" +
			"reads per tenant shown; the workers add their counts every 5 s).",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 20, Usage: "tenants shown per type (at most 1000)"},
			&cli.IntFlag{Name: "budget", Value: defaultBudget, Usage: "most keys read per task type"},
			outputFlag(false),
		}, watchFlags()...),
		Action:      a.tenants,
		Subcommands: append([]*cli.Command{a.limitsCommand()}, a.tenantOpsCommands()...), // limits.go, tenantops.go
	}
}

func (a *app) tenants(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	limit, budget := c.Int("limit"), c.Int("budget")
	if limit <= 0 || limit > 1000 || budget <= 0 {
		return fmt.Errorf("invalid --limit %d or --budget %d: want 1 to 1000 tenants and a positive number of keys", limit, budget)
	}
	asked := c.StringSlice("type")
	if err := checkTypes(c.Context, q, asked...); err != nil {
		return err
	}
	return a.watch(c, "tenants", func(w io.Writer) error {
		reps, err := depthReports(c.Context, q, asked, nil, budget, limit, a.now())
		if err != nil {
			return err
		}
		if err := addStartRates(c.Context, q, reps); err != nil {
			return err
		}
		if f == formatJSON {
			return writeJSON(w, struct {
				Types []typeDepth `json:"types"`
			}{reps})
		}
		renderTenants(w, reps)
		return nil
	})
}

// renderTenants writes each type's totals and its top tenants.
func renderTenants(w io.Writer, reps []typeDepth) {
	if len(reps) == 0 {
		fmt.Fprintln(w, "no task types yet: nothing was ever enqueued in this queue")
		return
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  ready %s  leased %s  scheduled %s  oldest ready %s\n", r.TaskType,
			fmtCount(r.Ready, r.Exact), fmtCount(r.Leased, r.Exact), fmtCount(r.Scheduled, r.Exact), ageCell(r.countRow))
		if len(r.Tenants) == 0 {
			fmt.Fprintln(w, "  no tenant has jobs")
			continue
		}
		tw := newTable(w)
		row(tw, "  TENANT", "READY", "LEASED", "SCHEDULED", "OLDEST READY", "LANES", "RUNNING/LIMIT", "STARTS/S")
		for _, t := range r.Tenants {
			row(tw, "  "+tenantCell(t.ItemSpace), fmtCount(t.Ready, t.Exact), fmtCount(t.Leased, t.Exact),
				fmtCount(t.Scheduled, t.Exact), ageCell(t.countRow), t.Lanes, runningCell(t), startsCell(t))
		}
		tw.Flush()
		if !r.TenantsExact {
			fmt.Fprintln(w, "  more tenants not read: the budget ended first (--budget)")
		}
	}
}

func (a *app) tenantCommand() *cli.Command {
	return &cli.Command{
		Name:      "tenant",
		Usage:     "one tenant's queue of a task type (its zone): lanes, who leases them, and its jobs",
		ArgsUsage: "ITEM-SPACE",
		Description: "ITEM-SPACE is the tenant (NewJob.ItemSpace; \"\" for jobs without one). Lane counts read at most\n" +
			"about 10,000 keys in all; jobs are listed in priority, lane and vesting order, --limit per page.",
		Flags: []cli.Flag{
			typeFlag(),
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 50, Usage: "most jobs listed (at most 1000)"},
			&cli.StringFlag{Name: "after", Usage: "resume the job listing from the cursor the previous page printed"},
			outputFlag(false),
		},
		Action: a.tenant,
	}
}

type zoneLaneRow struct {
	Priority       string     `json:"priority"`
	Lane           int        `json:"lane"`
	NextVest       *time.Time `json:"next_vest"`
	PointerMissing bool       `json:"pointer_missing,omitempty"`
	LeasedBy       string     `json:"leased_by,omitempty"`
	Short          bool       `json:"short,omitempty"`
	Ready          int        `json:"ready"`
	Leased         int        `json:"leased"`
	Scheduled      int        `json:"scheduled"`
	Exact          bool       `json:"exact"`
}

func (a *app) tenant(c *cli.Context) error {
	if c.Args().Len() != 1 {
		return newUsageError(c, errors.New("want one ITEM-SPACE (\"\" for jobs without a tenant)"))
	}
	space := c.Args().First()
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t := c.String("type")
	if c.Int("limit") <= 0 {
		return fmt.Errorf("invalid --limit %d: want a positive number", c.Int("limit"))
	}
	if err := checkTypes(c.Context, q, t); err != nil {
		return err
	}
	info, err := q.ZoneInfo(c.Context, t, space)
	if err != nil {
		return err
	}
	after := quick.Cursor(c.String("after"))
	page, err := q.ZoneJobs(c.Context, quick.ZoneJobsOptions{TaskType: t, ItemSpace: space, Limit: c.Int("limit"), Cursor: after})
	if errors.Is(err, quick.ErrInvalidCursor) {
		return fmt.Errorf("invalid --after %q: not a cursor printed by quick tenant for this type and tenant: %w", after, err)
	}
	if err != nil {
		return err
	}
	lanes := make([]zoneLaneRow, 0, len(info.LaneStates))
	for _, l := range info.LaneStates {
		lanes = append(lanes, zoneLaneRow{
			Priority: l.Priority.String(), Lane: l.Lane, NextVest: timePtr(l.NextVest), PointerMissing: l.PointerMissing,
			LeasedBy: l.Holder, Short: l.Short, Ready: l.ReadyJobs, Leased: l.LeasedJobs, Scheduled: l.ScheduledJobs, Exact: l.Exact,
		})
	}
	if f == formatJSON {
		out := struct {
			TaskType   string        `json:"task_type"`
			ItemSpace  string        `json:"item_space"`
			ZoneLanes  int           `json:"zone_lanes"`
			LaneStates []zoneLaneRow `json:"lane_states"`
			Jobs       []jobJSON     `json:"jobs"`
			Next       string        `json:"next,omitempty"`
		}{t, space, info.Lanes, lanes, []jobJSON{}, string(page.Next)}
		for _, j := range page.Jobs {
			out.Jobs = append(out.Jobs, toJobJSON(j, false))
		}
		return writeJSON(a.d.Stdout, out)
	}
	w, now := a.d.Stdout, a.now()
	fmt.Fprintf(w, "%s  tenant %s  %d lanes for new jobs\n", t, tenantCell(space), info.Lanes)
	if len(lanes) == 0 {
		fmt.Fprintln(w, "  no lane holds jobs")
	} else {
		tw := newTable(w)
		row(tw, "  PRIORITY", "LANE", "NEXT WORK", "LEASED BY", "READY", "LEASED", "SCHEDULED")
		for _, l := range lanes {
			next := fmtRel(*l.NextVest, now)
			if l.PointerMissing {
				next += " (no pointer!)"
			}
			holder := dash(l.LeasedBy)
			if l.Short {
				holder += " (short jobs)"
			}
			row(tw, "  "+l.Priority, l.Lane, next, holder, fmtCount(l.Ready, l.Exact), fmtCount(l.Leased, l.Exact), fmtCount(l.Scheduled, l.Exact))
		}
		tw.Flush()
	}
	if len(page.Jobs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	row(tw, "ID", "PRIORITY", "STATE", "LANE", "RUN AT", "ATTEMPT", "HOLDER")
	for _, j := range page.Jobs {
		row(tw, j.ID, j.Priority, j.State, j.Lane, fmtRel(j.RunAt, now), attempts(j), dash(j.Holder))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d jobs", len(page.Jobs))
	if page.Next != "" {
		fmt.Fprintf(w, "; more: quick tenant %q --type %s --after %s", space, t, page.Next)
	}
	fmt.Fprintln(w)
	return nil
}

// addStartRates fills each shown tenant's start rate: two point reads per
// tenant (worker.ReadTenantStarts), the tenants shown only.
func addStartRates(ctx context.Context, q *quick.Queue, reps []typeDepth) error {
	for i := range reps {
		names := make([]string, len(reps[i].Tenants))
		for k, t := range reps[i].Tenants {
			names[k] = t.ItemSpace
		}
		if len(names) == 0 {
			continue
		}
		rates, err := worker.ReadTenantStarts(ctx, q, reps[i].TaskType, names)
		if err != nil {
			return err
		}
		for k := range reps[i].Tenants {
			ps := rates[names[k]].PerSecond
			reps[i].Tenants[k].StartsPerSecond = &ps
		}
	}
	return nil
}

// runningCell is running/limit for a tenant with a concurrency limit.
func runningCell(t tenantDepth) string {
	if t.ConcurrencyLimit <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", t.Running, t.ConcurrencyLimit)
}

// startsCell is the start rate, with the rate limit when there is one.
func startsCell(t tenantDepth) string {
	if t.StartsPerSecond == nil {
		return "-"
	}
	s := strconv.FormatFloat(*t.StartsPerSecond, 'f', 2, 64)
	if t.RateLimit > 0 {
		s += "/" + strconv.FormatFloat(t.RateLimit, 'f', -1, 64)
	}
	return s
}
