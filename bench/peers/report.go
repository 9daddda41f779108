package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// environment is what a reader needs to judge the figures.
type environment struct {
	Config     config            `json:"config"`
	Reps       int               `json:"reps"`
	GoVersion  string            `json:"go_version"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	NumCPU     int               `json:"num_cpu"`
	Versions   map[string]string `json:"versions"`
	Postgres   map[string]string `json:"postgres,omitempty"`
	Redis      map[string]string `json:"redis,omitempty"`
	// WorkerPGPool is each River worker process's pool size (-procs > 1).
	WorkerPGPool int    `json:"worker_process_pg_pool,omitempty"`
	LoadBefore   string `json:"loadavg_before"`
	LoadAfter    string `json:"loadavg_after"`
}

// row is one system's figures over the repetitions. CPU is CPU-seconds per
// 1,000 jobs, client plus server processes.
type row struct {
	System        string   `json:"system"`
	EnqueueRate   summary  `json:"enqueue_jobs_per_s"`
	EnqueueCPU    summary  `json:"enqueue_cpu_per_1k"`
	DrainRate     summary  `json:"drain_jobs_per_s"`
	DrainCPU      summary  `json:"drain_cpu_per_1k"`
	EnqDrainCPU   summary  `json:"enqueue_plus_drain_cpu_per_1k"`
	ServerShare   summary  `json:"enqueue_plus_drain_server_share"`
	IdleP50       summary  `json:"idle_p50_ms"`
	IdleP99       summary  `json:"idle_p99_ms"`
	SteadyRate    summary  `json:"steady_jobs_per_s"`
	SteadyP99     summary  `json:"steady_p99_ms"`
	SteadyCPU     summary  `json:"steady_cpu_per_1k"`
	Runs          []result `json:"runs"`
	Errors        []string `json:"errors,omitempty"`
	serverMeasure bool
}

type report struct {
	Environment environment `json:"environment"`
	Rows        []row       `json:"rows"`
	Notes       []string    `json:"notes"`
}

func buildReport(sys []system, results [][]result, env environment) report {
	env.GoVersion = runtime.Version()
	env.GOMAXPROCS = runtime.GOMAXPROCS(0)
	env.NumCPU = runtime.NumCPU()
	ran := map[string]bool{}
	for _, s := range sys {
		if p, ok := s.(*procSystem); ok {
			s = p.system
		}
		switch q := s.(type) {
		case *quickSystem:
			if q.memkv {
				ran["memkv"] = true
			}
		case *riverSystem:
			ran["river"] = true
		case *asynqSystem:
			ran["asynq"] = true
		}
	}
	rep := report{Environment: env, Notes: notes(env, ran)}
	for i, s := range sys {
		rs := results[i]
		col := func(f func(r result) float64) summary {
			v := make([]float64, len(rs))
			for j, r := range rs {
				v[j] = f(r)
			}
			return summarize(v)
		}
		jobs := env.Config.Jobs
		ok := func(r result, x float64) float64 {
			if math.IsNaN(r.DrainRate) {
				return math.NaN()
			}
			return x
		}
		rw := row{
			System:      s.Name(),
			EnqueueRate: col(func(r result) float64 { return r.EnqueueRate }),
			EnqueueCPU:  col(func(r result) float64 { return ok(r, per1k(r.EnqueueCPU, jobs)) }),
			DrainRate:   col(func(r result) float64 { return r.DrainRate }),
			DrainCPU:    col(func(r result) float64 { return ok(r, per1k(r.DrainCPU, jobs)) }),
			EnqDrainCPU: col(func(r result) float64 {
				return ok(r, per1k(cpuTimes{Client: r.EnqueueCPU.Client + r.DrainCPU.Client, Server: r.EnqueueCPU.Server + r.DrainCPU.Server}, jobs))
			}),
			ServerShare: col(func(r result) float64 {
				t := r.EnqueueCPU.total() + r.DrainCPU.total()
				return ok(r, (r.EnqueueCPU.Server+r.DrainCPU.Server)/t)
			}),
			IdleP50:    col(func(r result) float64 { return r.IdleP50 }),
			IdleP99:    col(func(r result) float64 { return r.IdleP99 }),
			SteadyRate: col(func(r result) float64 { return r.SteadyRate }),
			SteadyP99:  col(func(r result) float64 { return r.SteadyP99 }),
			SteadyCPU: col(func(r result) float64 {
				if r.SteadyStarted == 0 || math.IsNaN(r.SteadyRate) {
					return math.NaN()
				}
				return per1k(r.SteadyCPU, r.SteadyStarted)
			}),
			Runs:          rs,
			serverMeasure: len(s.ServerPIDs()) > 0,
		}
		for j, r := range rs {
			for _, e := range r.Errors {
				rw.Errors = append(rw.Errors, fmt.Sprintf("repetition %d: %s", j+1, e))
			}
		}
		rep.Rows = append(rep.Rows, rw)
	}
	return rep
}

func (r report) failed() bool {
	for _, rw := range r.Rows {
		if len(rw.Errors) > 0 {
			return true
		}
	}
	return false
}

func (r report) writeMarkdown(w io.Writer) {
	c := r.Environment.Config
	where, client := "in this process", "this process"
	if c.Procs > 1 {
		where = fmt.Sprintf("in %d worker processes of %d each", c.Procs, perChild(c.Slots, c.Procs))
		client = "this process, its worker processes"
	}
	fmt.Fprintf(w, "Peers: %d jobs enqueued in batches of %d, drained with %d handler slots %s (no-op handler); "+
		"idle latency over %d samples ~%s apart; steady %.0f jobs/s for %s from %d producers. "+
		"%d interleaved repetition(s): median (min–max). CPU is CPU-seconds per 1,000 jobs, %s plus the server processes.\n\n",
		c.Jobs, c.Batch, perChild(c.Slots, c.Procs)*c.Procs, where, c.IdleSamples, c.IdleInterval, c.Rate, c.SteadyFor, c.Producers,
		r.Environment.Reps, client)
	fmt.Fprintln(w, "| system | enqueue jobs/s | enqueue CPU/1k | drain jobs/s | drain CPU/1k | enqueue+drain CPU/1k (server's share) | idle p50 ms | idle p99 ms | steady jobs/s | steady p99 ms | steady CPU/1k |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, rw := range r.Rows {
		share := "all in process"
		if rw.serverMeasure {
			share = "server " + rw.ServerShare.scaled(100).format("%.0f%%")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s |\n", rw.System,
			rw.EnqueueRate.format("%.0f"), rw.EnqueueCPU.format("%.3f"),
			rw.DrainRate.format("%.0f"), rw.DrainCPU.format("%.3f"),
			rw.EnqDrainCPU.format("%.3f"), share,
			rw.IdleP50.format("%.1f"), rw.IdleP99.format("%.1f"),
			rw.SteadyRate.format("%.0f"), rw.SteadyP99.format("%.1f"), rw.SteadyCPU.format("%.3f"))
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, rw := range r.Rows {
		for _, e := range rw.Errors {
			fmt.Fprintf(w, "- ERROR %s: %s\n", rw.System, e)
		}
	}
}

// notes state the settings that decide the comparison, as measured.
func notes(env environment, ran map[string]bool) []string {
	var n []string
	if ran["memkv"] {
		n = append(n, "quickfdb on memkv keeps everything in this process's memory: nothing is written to disk and no network is crossed, so its CPU is all client CPU. "+
			"\"with FDB latencies\" injects memkv.FDBLatency() (read version 0.3–1 ms, read 0.1–1 ms, commit 1.5–2.5 ms) as sleeps: it shows round-trip-bound rates, not FDB's CPU.")
	}
	if ran["river"] {
		n = append(n, "River's default FetchCooldown (100 ms) caps a client near MaxWorkers jobs per 100 ms, about 1,000 jobs/s with 100 slots; River's own benchmark (cmd/river/riverbench) uses FetchCooldown 2 ms and FetchPollInterval 20 ms, so both rows are shown.")
	}
	if ran["asynq"] {
		n = append(n, "Asynq has no bulk enqueue: a batch is its jobs enqueued by concurrent Enqueue calls. Asynq's server runs with its defaults (TaskCheckInterval 1 s when queues are empty), which is what sets its idle latency.")
	}
	n = append(n, "Drain figures include worker start-up (River's leader election and first fetch, quickfdb's presence record and first claims, Asynq's server start) and end when the graceful stop has flushed completions; idle and steady runs start after a warm-up job.")
	if c := env.Config; c.Procs > 1 {
		n = append(n, fmt.Sprintf("Every workload's worker ran in %d child processes of this binary with %d handler slots each; enqueues ran in this process. "+
			"The children were started and connected before each workload's clock and CPU sample; their CPU counts as client CPU. "+
			"Each handler start is reported to this process over a pipe in batches (every %s or %d bytes), stamped with its start time in the child. "+
			"The memkv rows cannot share their database with other processes and were not run.",
			c.Procs, perChild(c.Slots, c.Procs), reportEvery, reportBatch))
		if env.WorkerPGPool > 0 {
			n = append(n, fmt.Sprintf("Each River worker process has a pool of %d Postgres connections (-pg-pool shared out, at least 4).", env.WorkerPGPool))
		}
	}
	if env.Postgres != nil {
		n = append(n, "Postgres (durable: every commit waits for its WAL flush when fsync and synchronous_commit are on): "+kvString(env.Postgres)+".")
	}
	if env.Redis != nil {
		n = append(n, "Redis: "+kvString(env.Redis)+".")
	}
	n = append(n, fmt.Sprintf("Go %s, GOMAXPROCS %d, %d CPUs; load average before %s, after %s.",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), env.LoadBefore, env.LoadAfter))
	if len(env.Versions) > 0 {
		n = append(n, "Versions: "+kvString(env.Versions)+".")
	}
	return n
}

func kvString(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// moduleVersions are the versions of the peers this binary was built with.
func moduleVersions() map[string]string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/riverqueue/river", "github.com/hibiken/asynq", "github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9":
			out[d.Path] = d.Version
		}
	}
	return out
}

func postgresSettings(ctx context.Context, pool *pgxpool.Pool) map[string]string {
	out := map[string]string{}
	var v string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err == nil {
		out["server_version"] = v
	}
	for _, name := range []string{"fsync", "synchronous_commit", "wal_sync_method", "shared_buffers"} {
		if err := pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err == nil {
			out[name] = v
		}
	}
	out["pool_max_conns"] = fmt.Sprint(pool.Config().MaxConns)
	return out
}

func redisSettings(ctx context.Context, s *asynqSystem) map[string]string {
	out := map[string]string{}
	if info, err := s.rdb.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				out["redis_version"] = v
			}
		}
	}
	for _, name := range []string{"appendonly", "appendfsync", "save"} {
		if m, err := s.rdb.ConfigGet(ctx, name).Result(); err == nil {
			if v, ok := m[name]; ok {
				if v == "" {
					v = `""`
				}
				out[name] = v
			}
		}
	}
	return out
}
