package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/quickfdb/quickfdb/internal/bench"
	"github.com/quickfdb/quickfdb/internal/procbench"
	"github.com/quickfdb/quickfdb/kv"
)

// procsWorkerCmdName is the hidden subcommand procs starts its children
// with: one worker process each.
const procsWorkerCmdName = "procs-worker"

// procsCmd drains a backlog on a FoundationDB cluster with 1, 4, 16...
// worker processes (internal/procbench) and prints a row per count.
func procsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := procbench.Defaults()
	fs := flag.NewFlagSet("procs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ClusterFile, "cluster-file", "", "FoundationDB cluster file, for this process and its children (\"\": the default one); needs a build with -tags fdb")
	procs := fs.String("procs", joinInts(cfg.Procs), "worker process counts, one drain each")
	fs.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "backlog drained at each process count")
	fs.IntVar(&cfg.ZoneLanes, "zone-lanes", cfg.ZoneLanes, "lanes of the zone (zones layout; 0: quick's default, one that grows under backlog)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler slots per worker process")
	dur := fs.String("duration", cfg.Duration.String(), "job duration distribution, fixed|uniform|exp:mean (handlers sleep)")
	fs.BoolVar(&cfg.NoOp, "noop", false, "handlers return at once instead of sleeping")
	fs.IntVar(&cfg.Payload, "payload", cfg.Payload, "payload bytes per job")
	fs.StringVar(&cfg.Complete, "complete", cfg.Complete, "with: handlers complete through Job.CompleteWith, adding to a counter key (exact count, a commit per job); ack: handlers return nil, acks batched (count from the children's reports)")
	fs.IntVar(&cfg.FillBatch, "fill-batch", cfg.FillBatch, "jobs per fill transaction")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the job durations")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "how long the children wait paused once all are up (a clock round)")
	fs.DurationVar(&cfg.Poll, "poll", cfg.Poll, "how often the completion counter is read")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "bound on one drain")
	fs.StringVar(&cfg.Subspace, "subspace", cfg.Subspace, "the run's subspace, cleared before each drain and after the last")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave the last drain's keys in the database")
	logDir := fs.String("log-dir", "", "directory for the children's logs (default a temporary one, removed after a clean run)")
	jsonOut := fs.String("json", "", "write the rows as JSON to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("procs: unexpected arguments %q", fs.Args()))
	}
	var err error
	if cfg.Procs, err = parseInts(*procs); err != nil {
		return fail(stderr, err)
	}
	if cfg.Duration, err = bench.ParseDist(*dur); err != nil {
		return fail(stderr, err)
	}
	if err := cfg.Validate(); err != nil {
		return fail(stderr, err)
	}
	db, err := openCluster(cfg.ClusterFile)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeDB(db)
	self, err := os.Executable()
	if err != nil {
		return fail(stderr, fmt.Errorf("procs: find this executable for the children: %w", err))
	}
	dir, cleanup, err := procsLogDir(*logDir)
	if err != nil {
		return fail(stderr, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	log.Info("procs: children's logs", "dir", dir)
	spawn := procbench.Exec(self, []string{procsWorkerCmdName}, nil, dir)
	rows, err := procbench.Run(ctx, db, cfg, spawn, stdout, log)
	if err != nil {
		return fail(stderr, fmt.Errorf("%w (children's logs in %s)", err, dir))
	}
	cleanup()
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(struct {
			Config procbench.Config `json:"config"`
			Rows   []procbench.Row  `json:"rows"`
		}{cfg, rows}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	return 0
}

// procsLogDir is dir, or a fresh temporary directory that cleanup removes.
func procsLogDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("procs: -log-dir: %w", err)
		}
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "quickbench-procs-")
	if err != nil {
		return "", nil, fmt.Errorf("procs: %w", err)
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}

// procsWorkerCmd is one child of procs: a worker on the cluster until
// SIGTERM, reporting on stdout (procbench.RunWorker).
func procsWorkerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := procbench.ParseWorkerArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return fail(stderr, err)
	}
	log, err := a.Logger(stderr)
	if err != nil {
		return fail(stderr, err)
	}
	db, err := openCluster(a.ClusterFile)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeDB(db)
	if err := procbench.RunWorker(ctx, a, db, stdout, log); err != nil {
		return fail(stderr, err)
	}
	return 0
}

func closeDB(db kv.Database) {
	if c, ok := db.(io.Closer); ok {
		_ = c.Close()
	}
}
