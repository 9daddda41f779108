package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/quickfdb/quickfdb/internal/soak"
)

// soakCmd runs the soak and its checker; it exits 1 on any violation.
func soakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := soak.Default()
	for _, a := range args {
		if a == "-short" || a == "--short" {
			cfg = soak.Short()
		}
	}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("short", false, "CI soak, about 20 s")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run length: chaos for duration minus a lease, then a drain")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producers")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "work jobs/s, all producers together")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers alive at a time")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler slots per worker")
	fs.DurationVar(&cfg.KillEvery, "kill-every", cfg.KillEvery, "mean time between kills")
	fs.DurationVar(&cfg.Skew, "skew", cfg.Skew, "worker clock offsets are uniform in ±skew")
	fs.Float64Var(&cfg.PauseShare, "pause", cfg.PauseShare, "share of handler runs that block past their lease")
	fs.Float64Var(&cfg.UnknownCommitted, "unknown-committed", cfg.UnknownCommitted, "share of write commits that apply and report 1021")
	fs.Float64Var(&cfg.UnknownNotCommitted, "unknown-not-committed", cfg.UnknownNotCommitted, "share of write commits dropped with 1021")
	fs.Float64Var(&cfg.Conflict, "conflict", cfg.Conflict, "share of write commits failed with a spurious 1020")
	fs.Float64Var(&cfg.TransientShare, "transient", cfg.TransientShare, "share of jobs whose first attempt fails")
	fs.Float64Var(&cfg.PoisonShare, "poison", cfg.PoisonShare, "share of jobs that always fail (must end dead-lettered)")
	fs.IntVar(&cfg.CronSchedules, "cron", cfg.CronSchedules, "cron chains")
	fs.StringVar(&cfg.CronSpec, "cron-spec", cfg.CronSpec, "spec of every cron chain")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed")
	fs.BoolVar(&cfg.Verbose, "v", false, "log the queue's, workers' and cron's warnings")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rep, err := soak.Run(ctx, cfg, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	rep.WriteSummary(stdout)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if n := len(rep.Verdict.Violations); n > 0 || rep.DrainTimedOut {
		fmt.Fprintf(stderr, "quickbench soak: %d violations\n", n)
		return 1
	}
	return 0
}
