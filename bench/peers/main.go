// Command peers races quickfdb against River (Postgres) and Asynq (Redis)
// on the same workloads on one machine: bulk enqueue, drain, enqueue-to-start
// latency at idle, and a steady arrival rate. It reports jobs/s and
// CPU-seconds per 1,000 jobs counting this process and the server
// processes (Postgres's whole process tree, Redis, fdbserver), over
// interleaved repetitions, as one markdown table and as JSON.
//
// It is its own module so that the library's go.mod does not carry River's
// and Asynq's dependencies; run.sh starts private Postgres and Redis servers
// on loopback ports and runs it. See README.md for the fairness notes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// systemNames are the rows, in table order.
var systemNames = []string{"quickfdb-zones-mem", "quickfdb-zones-fdblat", "quickfdb-short-mem", "quickfdb-short-fdblat", "quickfdb-fdb", "quickfdb-fdb-short", "river-default", "river-bench", "asynq"}

// onFDB reports whether a quickfdb row runs on FoundationDB (and so can
// run its worker in other processes).
func onFDB(name string) bool { return name == "quickfdb-fdb" || name == "quickfdb-fdb-short" }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == childFlag {
		return runChild(ctx, args, stderr) // a worker process of -procs (child.go)
	}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{}
	fs.IntVar(&cfg.Jobs, "jobs", 20_000, "jobs enqueued in bulk, then drained")
	fs.IntVar(&cfg.Batch, "batch", 100, "jobs per bulk enqueue")
	fs.IntVar(&cfg.Slots, "slots", 100, "handler slots (quickfdb Concurrency, River MaxWorkers, Asynq Concurrency)")
	fs.IntVar(&cfg.Procs, "procs", 1, "worker processes: above 1, each row's worker runs in this many child processes with slots/procs slots each (memkv rows are skipped)")
	fs.IntVar(&cfg.IdleSamples, "idle-samples", 200, "enqueue-to-start samples at idle")
	fs.DurationVar(&cfg.IdleInterval, "idle-interval", 50*time.Millisecond, "mean gap between idle samples")
	fs.Float64Var(&cfg.Rate, "rate", 2000, "steady arrival rate, jobs/s")
	fs.DurationVar(&cfg.SteadyFor, "steady", 10*time.Second, "steady run length")
	fs.IntVar(&cfg.Producers, "producers", 32, "goroutines enqueueing single jobs in the steady run")
	fs.DurationVar(&cfg.PhaseTimeout, "phase-timeout", 3*time.Minute, "bound on each workload")
	fs.DurationVar(&cfg.SettleTimeout, "settle-timeout", 15*time.Second, "wait for the last starts after the idle and steady runs")
	reps := fs.Int("reps", 3, "interleaved repetitions")
	systems := fs.String("systems", strings.Join(systemNames, ","), "rows to run: "+strings.Join(systemNames, ","))
	pgDSN := fs.String("pg-dsn", "", "Postgres for River (pgx DSN); River rows are skipped without it")
	pgPool := fs.Int("pg-pool", 20, "Postgres connections in River's pool")
	redisAddr := fs.String("redis-addr", "", "Redis for Asynq (host:port); the Asynq row is skipped without it")
	clusterFile := fs.String("fdb-cluster-file", "", "FoundationDB cluster file for the quickfdb-fdb and quickfdb-fdb-short rows (binary built with -tags fdb)")
	fdbPIDs := fs.String("fdb-pids", "", "comma-separated fdbserver pids whose CPU counts as the FDB row's server CPU")
	seed := fs.Uint64("seed", 1, "seed of the idle gaps and memkv's latency jitter")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file (- for stdout)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := validate(cfg, *reps); err != nil {
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 2
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*systems, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	env := environment{Config: cfg, Reps: *reps, LoadBefore: loadAvg()}
	if cfg.Procs > 1 && cfg.Slots%cfg.Procs != 0 {
		fmt.Fprintf(stderr, "peers: -slots %d is not a multiple of -procs %d: each worker process gets %d slots, %d in all\n",
			cfg.Slots, cfg.Procs, perChild(cfg.Slots, cfg.Procs), perChild(cfg.Slots, cfg.Procs)*cfg.Procs)
	}
	sys, pool, err := openSystems(ctx, want, cfg.Procs, *pgDSN, *pgPool, *redisAddr, *clusterFile, *fdbPIDs, int64(*seed), &env, stderr)
	if pool != nil {
		defer pool.Close()
	}
	for _, s := range sys {
		defer s.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 1
	}
	if len(sys) == 0 {
		fmt.Fprintln(stderr, "peers: no system to run")
		return 2
	}

	rng := rand.New(rand.NewPCG(*seed, 0))
	results := make([][]result, len(sys))
	for rep := range *reps {
		for i, s := range sys {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(stderr, "peers: repetition %d/%d: %s\n", rep+1, *reps, s.Name())
			r := runAll(ctx, s, cfg, rng)
			for _, e := range r.Errors {
				fmt.Fprintf(stderr, "peers:   %s: %s\n", s.Name(), e)
			}
			results[i] = append(results[i], r)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "peers: interrupted: %v\n", ctx.Err())
	}
	env.LoadAfter = loadAvg()
	rep := buildReport(sys, results, env)
	rep.writeMarkdown(stdout)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "peers: json: %v\n", err)
			return 1
		}
		b = append(b, '\n')
		if *jsonOut == "-" {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "peers: %v\n", err)
			return 1
		}
	}
	if rep.failed() || ctx.Err() != nil {
		return 1
	}
	return 0
}

func validate(c config, reps int) error {
	switch {
	case c.Jobs < 1 || c.Batch < 1 || c.Slots < 1 || c.Producers < 1 || c.Procs < 1 || reps < 1:
		return errors.New("-jobs, -batch, -slots, -producers, -procs and -reps must be positive")
	case c.IdleSamples < 1 || c.IdleInterval <= 0:
		return errors.New("-idle-samples and -idle-interval must be positive")
	case c.Rate <= 0 || c.SteadyFor <= 0 || c.Rate*c.SteadyFor.Seconds() < 1:
		return errors.New("-rate × -steady must be at least one job")
	case c.PhaseTimeout <= 0 || c.SettleTimeout <= 0:
		return errors.New("-phase-timeout and -settle-timeout must be positive")
	}
	return nil
}

// openSystems connects to what each wanted row needs, in table order, and
// records the servers' settings in env. With procs > 1 each row's worker
// runs in procs child processes (procs.go), given the flags to reach the
// same servers; the memkv rows, whose database lives in this process's
// memory, cannot be shared with them and are skipped.
func openSystems(ctx context.Context, want map[string]bool, procs int, pgDSN string, pgPool int, redisAddr, clusterFile, fdbPIDs string,
	seed int64, env *environment, stderr io.Writer) ([]system, *pgxpool.Pool, error) {
	for name := range want {
		if !known(name) {
			return nil, nil, fmt.Errorf("unknown system %q (want %s)", name, strings.Join(systemNames, ","))
		}
	}
	var sys []system
	var pool *pgxpool.Pool
	var postmaster int
	// wrap runs s's worker in procs processes started with childArgs.
	wrap := func(name string, s system, childArgs ...string) system {
		if procs == 1 {
			return s
		}
		args := func() []string { return childArgs }
		if q, ok := s.(*quickSystem); ok {
			args = func() []string { return append(append([]string(nil), childArgs...), q.runArgs()...) }
		}
		return &procSystem{system: s, key: name, n: procs, args: args, stderr: stderr}
	}
	for _, name := range systemNames {
		if !want[name] {
			continue
		}
		if procs > 1 && strings.HasPrefix(name, "quickfdb-") && !onFDB(name) {
			fmt.Fprintf(stderr, "peers: -procs %d: skipping %s (memkv lives in this process's memory; worker processes cannot share it)\n", procs, name)
			continue
		}
		switch name {
		case "quickfdb-zones-mem":
			sys = append(sys, newQuickMem("quickfdb zones, memkv, no latency", memkv.Latency{}, seed).zones(false))
		case "quickfdb-zones-fdblat":
			sys = append(sys, newQuickMem("quickfdb zones, memkv with FDB latencies", memkv.FDBLatency(), seed).zones(false))
		case "quickfdb-short-mem":
			sys = append(sys, newQuickMem("quickfdb zones short-job, memkv, no latency", memkv.Latency{}, seed).zones(true))
		case "quickfdb-short-fdblat":
			sys = append(sys, newQuickMem("quickfdb zones short-job, memkv with FDB latencies", memkv.FDBLatency(), seed).zones(true))
		case "quickfdb-fdb", "quickfdb-fdb-short":
			if clusterFile == "" {
				continue // optional row: only with a cluster
			}
			pids, err := parsePIDs(fdbPIDs)
			if err != nil {
				return sys, pool, err
			}
			s, err := newQuickFDB(clusterFile, pids, name == "quickfdb-fdb-short")
			if err != nil {
				return sys, pool, err
			}
			sys = append(sys, wrap(name, s, "-fdb-cluster-file", clusterFile))
		case "river-default", "river-bench":
			if pgDSN == "" {
				fmt.Fprintf(stderr, "peers: no -pg-dsn: skipping %s\n", name)
				continue
			}
			if pool == nil {
				cfg, err := pgxpool.ParseConfig(pgDSN)
				if err != nil {
					return sys, nil, fmt.Errorf("-pg-dsn: %w", err)
				}
				cfg.MaxConns = int32(pgPool)
				if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
					return sys, nil, fmt.Errorf("postgres: %w", err)
				}
				if postmaster, err = prepareRiver(ctx, pool); err != nil {
					return sys, pool, err
				}
				env.Postgres = postgresSettings(ctx, pool)
				if procs > 1 {
					env.WorkerPGPool = childPool(pgPool, procs)
				}
			}
			label := "River, Postgres, default fetch (FetchCooldown 100ms, FetchPollInterval 1s)"
			if name == "river-bench" {
				label = fmt.Sprintf("River, Postgres, River's benchmark fetch (FetchCooldown %s, FetchPollInterval %s)",
					riverBenchFetchCooldown, riverBenchFetchPollInterval)
			}
			s, err := newRiver(label, pool, postmaster, name == "river-bench")
			if err != nil {
				return sys, pool, err
			}
			sys = append(sys, wrap(name, s, "-pg-dsn", pgDSN, "-pg-pool", strconv.Itoa(childPool(pgPool, procs))))
		case "asynq":
			if redisAddr == "" {
				fmt.Fprintln(stderr, "peers: no -redis-addr: skipping asynq")
				continue
			}
			s, err := newAsynq(ctx, redisAddr)
			if err != nil {
				return sys, pool, err
			}
			env.Redis = redisSettings(ctx, s)
			sys = append(sys, wrap(name, s, "-redis-addr", redisAddr))
		}
	}
	env.Versions = moduleVersions()
	return sys, pool, nil
}

func known(name string) bool {
	for _, n := range systemNames {
		if n == name {
			return true
		}
	}
	return false
}

func parsePIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("-fdb-pids: bad pid %q", f)
		}
		out = append(out, pid)
	}
	return out, nil
}
