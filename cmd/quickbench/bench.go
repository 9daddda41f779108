package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/quickfdb/quickfdb/internal/harness/bench"
)

// benchCmd parses the bench flags over the full (or --short) preset, runs
// the suite and writes the table, the JSON and the SVG.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "CI mode: every variant, workers 1 and 16, ~1.5 s per run, one repetition")
	// Presets are applied before the other flags are read, so explicit
	// flags override them: parse once for --short, then again.
	_ = fs.Parse(filterShort(args))
	cfg := bench.Full()
	if *short {
		cfg = bench.Short()
	}
	fs = flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("short", *short, "CI mode: every variant, workers 1 and 16, ~1.5 s per run")
	variants := fs.String("variants", strings.Join(cfg.Variants, ","), "claim strategies to run: "+strings.Join(bench.Variants, ","))
	workers := fs.String("workers", joinInts(cfg.Workers), "worker counts")
	modes := fs.String("modes", "backlog,steady", "backlog (drain a preloaded backlog) and/or steady (producers at --rate)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler slots per worker")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producers in steady mode")
	dur := fs.String("duration", cfg.Duration.String(), "job duration distribution, fixed|uniform|exp:mean (handlers sleep)")
	fs.IntVar(&cfg.Payload, "payload", cfg.Payload, "payload bytes")
	fs.Float64Var(&cfg.DelayShare, "delayed", cfg.DelayShare, "share of jobs enqueued with a delay")
	fs.DurationVar(&cfg.MaxDelay, "max-delay", cfg.MaxDelay, "delays are uniform up to this")
	fs.Float64Var(&cfg.FailShare, "failing", cfg.FailShare, "share of jobs whose first attempt fails")
	fs.DurationVar(&cfg.RetryDelay, "retry-delay", cfg.RetryDelay, "backoff before a failed job runs again")
	fs.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "jobs preloaded in backlog mode")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "arrival rate in steady mode, jobs/s")
	fs.DurationVar(&cfg.RunLength, "run", cfg.RunLength, "run length per variant and worker count")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "workload and engine seed")
	fs.DurationVar(&cfg.Poll, "poll", cfg.Poll, "idle wait between empty claims")
	fs.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions of every cell, interleaved (the table shows median and range)")
	fs.IntVar(&cfg.FairWorkers, "fair-workers", cfg.FairWorkers, "workers in the fairness run")
	fs.Float64Var(&cfg.FairRate, "fair-rate", cfg.FairRate, "arrival rate of the fairness run")
	fs.DurationVar(&cfg.FairRun, "fair-run", cfg.FairRun, "length of each fairness run")
	fs.Float64Var(&cfg.FairSlowShare, "fair-slow", cfg.FairSlowShare, "share of slow jobs in the fairness run")
	noFair := fs.Bool("no-fairness", false, "skip the fairness runs")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	svgOut := fs.String("svg", "", "write a throughput/conflict plot to this SVG file")
	clusterFile := fs.String("cluster-file", "", "run on this FoundationDB cluster (binary built with -tags fdb)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var err error
	if cfg.Duration, err = bench.ParseDist(*dur); err != nil {
		return fail(stderr, err)
	}
	if cfg.Workers, err = parseInts(*workers); err != nil {
		return fail(stderr, err)
	}
	cfg.Variants = splitList(*variants)
	cfg.Modes = nil
	for _, m := range splitList(*modes) {
		cfg.Modes = append(cfg.Modes, bench.Mode(m))
	}
	if err := cfg.Validate(); err != nil {
		return fail(stderr, err)
	}
	eng := bench.MemEngine(int64(cfg.Seed))
	if *clusterFile != "" {
		if eng, err = bench.FDBEngine(*clusterFile); err != nil {
			return fail(stderr, err)
		}
	}
	rep, err := bench.Suite(ctx, eng, cfg, !*noFair, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	rep.WriteTable(stdout)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if *svgOut != "" {
		if err := os.WriteFile(*svgOut, []byte(rep.SVG()), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if v := rep.Violations(); len(v) > 0 {
		fmt.Fprintf(stderr, "quickbench: %d invariant violations\n", len(v))
		return 1
	}
	return 0
}

func filterShort(args []string) []string {
	for _, a := range args {
		if a == "-short" || a == "--short" || a == "-short=true" || a == "--short=true" {
			return []string{"--short"}
		}
	}
	return nil
}

func fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "quickbench: %v\n", err)
	return 1
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
