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
	"strings"
	"syscall"

	"github.com/quickfdb/quickfdb/internal/harness/chaos"
	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster"
	"github.com/quickfdb/quickfdb/internal/harness/procbench"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// chaosWorkerCmdName is the hidden subcommand chaos starts its worker
// processes with.
const chaosWorkerCmdName = "chaos-worker"

// chaosCmd runs the chaos run (internal/harness/chaos): on a local cluster
// it starts (-fdb-bin) or one scripts/fdb-cluster started (-cluster-dir),
// with server processes killed, a process excluded, the coordinators
// changed and the whole cluster restarted; without either, on memkv with
// commit-fault bursts and the workers as goroutines. It exits 1 on any
// violation.
func chaosCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := chaos.Full()
	for _, a := range args {
		if a == "-short" || a == "--short" || a == "-short=true" || a == "--short=true" {
			cfg = chaos.Short()
		}
	}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("short", false, "the CI run's defaults (a few minutes, each fault once) instead of the full run's (30 min of faults, over 100,000 jobs)")
	fdbBin := fs.String("fdb-bin", "", "start a local cluster from this FoundationDB installation's fdbserver and fdbcli (3 storage, 2 log, 2 stateless; double ssd) in a temporary directory; needs a binary built with -tags fdb")
	clusterDir := fs.String("cluster-dir", "", "run on the cluster scripts/fdb-cluster started in this directory, and break it")
	keepCluster := fs.Bool("keep-cluster", false, "with -fdb-bin: leave the cluster's directory (data, logs) in place")
	fs.StringVar(&cfg.Subspace, "subspace", cfg.Subspace, "tuple prefix of the run's data (a random run id is added)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker processes")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler slots per task type in each worker")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producers (goroutines of this process, each with its own transactions)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "jobs/s, all producers together")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "jobs per producer transaction")
	fs.IntVar(&cfg.CronChains, "cron", cfg.CronChains, "cron chains")
	fs.StringVar(&cfg.CronSpec, "cron-spec", cfg.CronSpec, "spec of every cron chain")
	fs.DurationVar(&cfg.Baseline, "baseline", cfg.Baseline, "healthy time before the first fault (the baseline figures)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "time under faults after the baseline")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", cfg.FaultEvery, "pause between two faults")
	fs.DurationVar(&cfg.Downtime, "downtime", cfg.Downtime, "how long a killed server process stays down")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "bound on the wait for every committed job to finish")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the job mix")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave the run's keys in the database")
	logDir := fs.String("log-dir", "", "directory for the worker processes' logs (default a temporary one, kept)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("chaos: unexpected arguments %q", fs.Args()))
	}
	if *fdbBin != "" && *clusterDir != "" {
		return fail(stderr, errors.New("chaos: give -fdb-bin (start a cluster) or -cluster-dir (use one), not both"))
	}
	if err := cfg.Validate(); err != nil {
		return fail(stderr, err)
	}
	env, cleanup, err := chaosEnv(ctx, cfg, *fdbBin, *clusterDir, *keepCluster, *logDir, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer cleanup()
	rep, err := chaos.Run(ctx, cfg, env)
	if err != nil {
		return fail(stderr, err)
	}
	rep.Write(stdout)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if !rep.Verdict.OK() {
		return 1
	}
	return 0
}

// errChaosNoFDB is chaos's error for a cluster in a build without
// FoundationDB.
var errChaosNoFDB = errors.New("built without -tags fdb: chaos on a cluster needs FoundationDB's client (rebuild with `go build -tags fdb ./cmd/quickbench`, which needs libfdb_c 7.3); without -fdb-bin and -cluster-dir it runs on memkv")

// chaosEnv is where the run happens: a cluster started now, one started
// before, or memkv.
func chaosEnv(ctx context.Context, cfg chaos.Config, fdbBin, clusterDir string, keepCluster bool, logDir string, stderr io.Writer) (chaos.Env, func(), error) {
	if fdbBin == "" && clusterDir == "" {
		env, _, closeDB := chaos.MemEnv(chaos.DefaultMemFaults(), stderr, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		return env, closeDB, nil
	}
	if !fdbkv.Built {
		return chaos.Env{}, nil, errChaosNoFDB
	}
	var c *cluster.Cluster
	var stop func()
	if fdbBin != "" {
		dir, err := os.MkdirTemp("", "quickbench-chaos-cluster-")
		if err != nil {
			return chaos.Env{}, nil, err
		}
		c, err = cluster.Start(ctx, cluster.Config{Bin: fdbBin, Dir: dir, Out: stderr, HealthyTimeout: cfg.RecoverTimeout})
		if err != nil {
			return chaos.Env{}, nil, err
		}
		stop = func() {
			_ = c.Stop()
			if keepCluster {
				fmt.Fprintf(stderr, "quickbench chaos: kept the cluster's directory %s\n", dir)
			} else {
				_ = os.RemoveAll(dir)
			}
		}
	} else {
		var err error
		if c, err = cluster.Load(clusterDir); err != nil {
			return chaos.Env{}, nil, err
		}
		c.SetLog(stderr)
		stop = func() {}
	}
	db, err := openCluster(c.ClusterFile)
	if err != nil {
		stop()
		return chaos.Env{}, nil, err
	}
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "quickbench-chaos-logs-"); err != nil {
			stop()
			return chaos.Env{}, nil, err
		}
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		stop()
		return chaos.Env{}, nil, err
	}
	fmt.Fprintf(stderr, "quickbench chaos: worker logs in %s\n", logDir)
	self, err := os.Executable()
	if err != nil {
		stop()
		return chaos.Env{}, nil, err
	}
	var names []string
	for _, p := range c.Procs {
		names = append(names, p.Name+" "+p.Addr)
	}
	env := chaos.Env{
		DB: db, ClusterFile: c.ClusterFile,
		Spawn:  procbench.Exec(self, []string{chaosWorkerCmdName}, nil, logDir),
		Faults: chaos.ClusterFaults(c, cfg.Downtime, cfg.RecoverTimeout),
		Engine: fmt.Sprintf("FoundationDB, %d processes (%s), cluster file %s", len(c.Procs), strings.Join(names, ", "), c.ClusterFile),
		Log:    stderr,
	}
	return env, func() { closeDB(db); stop() }, nil
}

// chaosWorkerCmd is one worker process of chaos, until SIGTERM.
func chaosWorkerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := chaos.ParseWorkerArgs(args, stderr)
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
	if !fdbkv.Built {
		return fail(stderr, errChaosNoFDB)
	}
	db, err := openCluster(a.ClusterFile)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeDB(db)
	if err := chaos.RunWorker(ctx, a, db, stdout, log); err != nil {
		return fail(stderr, err)
	}
	return 0
}
