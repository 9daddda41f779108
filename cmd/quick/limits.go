package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
)

// Tenant limits: quick tenants limits get/set/clear/list (quick/limits.go).

func (a *app) limitsCommand() *cli.Command {
	typeFlag := &cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type", Required: true}
	tenantFlag := &cli.StringFlag{Name: "tenant", Usage: "tenant (item space); \"\" is the no-tenant zone; omit for the task type's default"}
	return &cli.Command{
		Name:  "limits",
		Usage: "a tenant's limits of a task type: concurrency, rate with burst, weight (defaults per type, overrides per tenant)",
		Description: "Limits are enforced in the claims' own transactions; workers apply a change within a second.\n" +
			"A tenant's override replaces the type's default field by field: a field left out keeps the default,\n" +
			"-1 lifts a concurrency or rate limit the default sets.",
		Action: unknownCommand,
		Subcommands: []*cli.Command{
			{
				Name:   "get",
				Usage:  "show the task type's default, the tenant's override and what applies",
				Flags:  []cli.Flag{typeFlag, tenantFlag, outputFlag(false)},
				Action: a.limitsGet,
			},
			{
				Name:  "set",
				Usage: "set the tenant's override (or, without --tenant, the task type's default); fields not given are kept",
				Flags: []cli.Flag{typeFlag, tenantFlag,
					&cli.IntFlag{Name: "concurrency", Usage: "most jobs of the tenant running at once (0: none; -1 in an override: lift the default's)"},
					&cli.Float64Flag{Name: "rate", Usage: "most job starts a second, fractions allowed (0: none; -1 in an override: lift the default's)"},
					&cli.IntFlag{Name: "burst", Usage: "starts allowed at once under the rate (0: the rate rounded up)"},
					&cli.IntFlag{Name: "weight", Usage: "share of a busy task type's claims against other tenants, 1 to 1000 (0: 1)"},
					outputFlag(false),
				},
				Action: a.limitsSet,
			},
			{
				Name:   "clear",
				Usage:  "remove the tenant's override (or, without --tenant, the task type's default)",
				Flags:  []cli.Flag{typeFlag, tenantFlag, outputFlag(false)},
				Action: a.limitsClear,
			},
			{
				Name:  "list",
				Usage: "the task type's tenant overrides, in tenant order",
				Flags: []cli.Flag{typeFlag,
					&cli.StringFlag{Name: "after", Usage: "start after this tenant"},
					&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 100, Usage: "most tenants listed (at most 1000)"},
					outputFlag(false),
				},
				Action: a.limitsList,
			},
		},
	}
}

// limitsJSON is a Limits in the CLI's JSON output.
type limitsJSON struct {
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"`
	Burst       int     `json:"burst"`
	Weight      int     `json:"weight"`
}

func toLimitsJSON(l quick.Limits) limitsJSON {
	return limitsJSON{Concurrency: l.Concurrency, Rate: l.Rate, Burst: l.Burst, Weight: l.Weight}
}

func (a *app) limitsGet(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t, tenant := c.String("type"), c.String("tenant")
	info, err := q.GetLimits(c.Context, t, tenant)
	if err != nil {
		return err
	}
	if f == formatJSON {
		out := map[string]any{"task_type": t, "default": toLimitsJSON(info.Default), "effective": toLimitsJSON(info.Effective)}
		if c.IsSet("tenant") {
			out["tenant"] = tenant
		}
		if info.Override != nil {
			out["override"] = toLimitsJSON(*info.Override)
		}
		return writeJSON(a.d.Stdout, out)
	}
	tw := newTable(a.d.Stdout)
	row(tw, "", "CONCURRENCY", "RATE", "BURST", "WEIGHT")
	limitsRow(tw, "default ("+t+")", info.Default)
	if c.IsSet("tenant") {
		if info.Override != nil {
			limitsRow(tw, "override ("+tenantCell(tenant)+")", *info.Override)
		} else {
			row(tw, "override ("+tenantCell(tenant)+")", "-", "-", "-", "-")
		}
		limitsRow(tw, "applies", effective(info.Effective))
	}
	return tw.Flush()
}

// effective shows limits as they apply: no limit as none, the defaults
// filled in.
func effective(l quick.Limits) quick.Limits {
	if l.Weight == 0 {
		l.Weight = 1
	}
	return l
}

func limitsRow(w io.Writer, name string, l quick.Limits) {
	c := "none"
	if l.Concurrency > 0 {
		c = strconv.Itoa(l.Concurrency)
	} else if l.Concurrency == quick.NoLimit {
		c = "lifted"
	}
	r, b := "none", "-"
	if l.Rate > 0 {
		r = strconv.FormatFloat(l.Rate, 'g', -1, 64) + "/s"
		b = "auto"
		if l.Burst > 0 {
			b = strconv.Itoa(l.Burst)
		}
	} else if l.Rate == quick.NoLimit {
		r = "lifted"
	}
	wt := "-"
	if l.Weight > 0 {
		wt = strconv.Itoa(l.Weight)
	}
	row(w, name, c, r, b, wt)
}

func (a *app) limitsSet(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t, tenant := c.String("type"), c.String("tenant")
	var set bool
	for _, n := range []string{"concurrency", "rate", "burst", "weight"} {
		set = set || c.IsSet(n)
	}
	if !set {
		return newUsageError(c, fmt.Errorf("%s needs at least one of --concurrency, --rate, --burst, --weight", commandPath(c)))
	}
	// Fields not given keep what is stored.
	info, err := q.GetLimits(c.Context, t, tenant)
	if err != nil {
		return err
	}
	l := info.Default
	if c.IsSet("tenant") {
		l = quick.Limits{}
		if info.Override != nil {
			l = *info.Override
		}
	}
	if c.IsSet("concurrency") {
		l.Concurrency = c.Int("concurrency")
	}
	if c.IsSet("rate") {
		l.Rate = c.Float64("rate")
	}
	if c.IsSet("burst") {
		l.Burst = c.Int("burst")
	}
	if c.IsSet("weight") {
		l.Weight = c.Int("weight")
	}
	if c.IsSet("tenant") {
		err = q.SetTenantLimits(c.Context, t, tenant, l)
	} else {
		err = q.SetTypeLimits(c.Context, t, l)
	}
	if err != nil {
		return err
	}
	if f == formatJSON {
		out := map[string]any{"task_type": t, "limits": toLimitsJSON(l)}
		if c.IsSet("tenant") {
			out["tenant"] = tenant
		}
		return writeJSON(a.d.Stdout, out)
	}
	who := "the default of " + t
	if c.IsSet("tenant") {
		who = fmt.Sprintf("tenant %s of %s", tenantCell(tenant), t)
	}
	fmt.Fprintf(a.d.Stdout, "set the limits of %s; workers apply them within a second\n", who)
	tw := newTable(a.d.Stdout)
	row(tw, "", "CONCURRENCY", "RATE", "BURST", "WEIGHT")
	limitsRow(tw, "now", l)
	return tw.Flush()
}

func (a *app) limitsClear(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t, tenant := c.String("type"), c.String("tenant")
	if c.IsSet("tenant") {
		err = q.ClearTenantLimits(c.Context, t, tenant)
	} else {
		err = q.SetTypeLimits(c.Context, t, quick.Limits{})
	}
	if err != nil {
		return err
	}
	if f == formatJSON {
		out := map[string]any{"task_type": t, "cleared": true}
		if c.IsSet("tenant") {
			out["tenant"] = tenant
		}
		return writeJSON(a.d.Stdout, out)
	}
	if c.IsSet("tenant") {
		fmt.Fprintf(a.d.Stdout, "cleared the override of tenant %s of %s: the default applies\n", tenantCell(tenant), t)
	} else {
		fmt.Fprintf(a.d.Stdout, "cleared the default limits of %s\n", t)
	}
	return nil
}

func (a *app) limitsList(c *cli.Context) error {
	f, q, err := a.formatAndQueue(c)
	if err != nil {
		return err
	}
	t, n := c.String("type"), c.Int("limit")
	if n <= 0 || n > 1000 {
		return newUsageError(c, fmt.Errorf("invalid --limit %d: want 1 to 1000", n))
	}
	ls, more, err := q.ListTenantLimits(c.Context, t, c.String("after"), !c.IsSet("after"), n)
	if err != nil {
		return err
	}
	if f == formatJSON {
		type entry struct {
			Tenant string     `json:"tenant"`
			Limits limitsJSON `json:"limits"`
		}
		out := struct {
			TaskType string  `json:"task_type"`
			Tenants  []entry `json:"tenants"`
			More     bool    `json:"more"`
		}{TaskType: t, Tenants: []entry{}, More: more}
		for _, l := range ls {
			out.Tenants = append(out.Tenants, entry{l.ItemSpace, toLimitsJSON(l.Limits)})
		}
		return writeJSON(a.d.Stdout, out)
	}
	if len(ls) == 0 {
		fmt.Fprintf(a.d.Stdout, "no tenant of %s has an override\n", t)
		return nil
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TENANT", "CONCURRENCY", "RATE", "BURST", "WEIGHT")
	for _, l := range ls {
		limitsRow(tw, tenantCell(l.ItemSpace), l.Limits)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(a.d.Stdout, "more: --after %q\n", ls[len(ls)-1].ItemSpace)
	}
	return nil
}
