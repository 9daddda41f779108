package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// The scale of the worker runtime in processes (issue 23), simulated on
// the embedded engine: W workers (worker.Worker, each what one process
// runs: its own scanner per task type, acker, keeper and clock check) in
// this one process drain a backlog with handlers that do nothing, so that
// the queue, not the handler, is measured. memkv with FDB's latencies on
// the real clock. The workers start paused and wait for their clock
// checks; the drain starts at the resume. Reported per worker count:
// jobs/s from the first start to the last start, the process's CPU per 1,000 jobs (every worker, the
// engine and the Go runtime; the machine's other processes not counted),
// and the kv counts per job (commits, claim conflicts).
//
// All the workers share one process's CPU, so jobs/s grows with W only
// while the process is round-trip bound; once it is CPU bound (on a 2-core
// machine, soon) jobs/s stays flat and the CPU per job says what one more
// process would pay. The procs subcommand runs the same drain with real
// processes on a FoundationDB cluster.

// ScaleWorkersConfig is the sweep.
type ScaleWorkersConfig struct {
	Workers     []int `json:"workers"`
	Jobs        int   `json:"jobs"`        // backlog drained at each count
	Tenants     int   `json:"tenants"`     // item spaces the backlog spreads over
	Concurrency int   `json:"concurrency"` // handler slots per worker
	// Timeout bounds one drain.
	Timeout time.Duration `json:"timeout"`
	Seed    int64         `json:"seed"`
}

// DefaultScaleWorkers is 1, 2, 4 and 8 workers of 100 slots on a backlog
// of 20,000 jobs over 100 tenants.
func DefaultScaleWorkers() ScaleWorkersConfig {
	return ScaleWorkersConfig{Workers: []int{1, 2, 4, 8}, Jobs: 20_000, Tenants: 100, Concurrency: 100, Timeout: 5 * time.Minute, Seed: 1}
}

// WorkersResult is one worker count's drain.
type WorkersResult struct {
	Workers      int     `json:"workers"`
	Jobs         int64   `json:"jobs"`
	JobsPerSec   float64 `json:"jobs_per_s"`
	CPUPer1kJobs float64 `json:"cpu_s_per_1k_jobs"`
	CPUPerWallS  float64 `json:"cpu_s_per_wall_s"`
	CommitsPer   float64 `json:"commits_per_job"`
	ConflictsPer float64 `json:"conflicts_per_job"`
	ClaimsPer    float64 `json:"claims_per_job"`
	ClaimAcks    float64 `json:"acks_in_claims_share"`
	StartS       float64 `json:"start_s"` // until every worker claims
	MachinePerS  float64 `json:"machine_cpu_s_per_wall_s"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
}

// ScaleWorkers runs the sweep.
func ScaleWorkers(ctx context.Context, c ScaleWorkersConfig, log func(string, ...any)) ([]WorkersResult, error) {
	if c.Jobs < 1 || c.Tenants < 1 || c.Concurrency < 1 || len(c.Workers) == 0 {
		return nil, fmt.Errorf("bench: scale workers: bad configuration %+v", c)
	}
	var out []WorkersResult
	for _, w := range c.Workers {
		if w < 1 {
			return out, fmt.Errorf("bench: scale workers: %d workers", w)
		}
		r, err := scaleWorkersOne(ctx, c, w)
		if err != nil {
			return out, err
		}
		log("scale workers: %d workers: %.0f jobs/s, %.3f CPU-s per 1,000 jobs, %.4f commits/job", w, r.JobsPerSec, r.CPUPer1kJobs, r.CommitsPer)
		out = append(out, r)
	}
	return out, nil
}

func scaleWorkersOne(ctx context.Context, c ScaleWorkersConfig, n int) (WorkersResult, error) {
	raw := memkv.Open(memkv.Options{Latency: memkv.FDBLatency(), Seed: c.Seed})
	defer raw.Close()
	db := kv.WithCounters(raw)
	space := tuple.FromTuple(tuple.Tuple{"scale-workers"})
	q, err := quick.Open(ctx, db, space, quick.Options{Logger: quietLogger()})
	if err != nil {
		return WorkersResult{}, err
	}
	const taskType = "bench"
	for done := 0; done < c.Jobs; done += 500 {
		jobs := make([]quick.NewJob, min(500, c.Jobs-done))
		for i := range jobs {
			jobs[i] = quick.NewJob{TaskType: taskType, ItemSpace: fmt.Sprintf("tenant-%04d", (done+i)%c.Tenants), Payload: make([]byte, 100)}
		}
		if _, err := q.Enqueue(ctx, jobs...); err != nil {
			return WorkersResult{}, fmt.Errorf("bench: scale workers: preload: %w", err)
		}
	}
	// The workers start paused (their clock checks pass meanwhile), so the
	// drain is timed from the moment all of them may claim.
	if err := q.Pause(ctx, taskType); err != nil {
		return WorkersResult{}, err
	}
	var started atomic.Int64
	var first atomic.Int64 // when the first job started (Unix ns)
	all := make(chan struct{})
	total := int64(c.Jobs)
	ws := make([]*worker.Worker, n)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, n)
	t0 := time.Now()
	for i := range ws {
		w, err := worker.New(worker.Config{Queue: q, Logger: quietLogger(), ID: fmt.Sprintf("w%04d", i)})
		if err != nil {
			return WorkersResult{}, err
		}
		if err := worker.RegisterRaw(w, taskType, func(context.Context, *worker.RawJob) error {
			k := started.Add(1)
			if k == 1 {
				first.Store(time.Now().UnixNano())
			}
			if k == total {
				close(all)
			}
			return nil
		}, worker.HandlerOptions{Concurrency: c.Concurrency}); err != nil {
			return WorkersResult{}, err
		}
		ws[i] = w
		go func() { done <- w.Run(runCtx) }()
	}
	stopAll := func() {
		for _, w := range ws {
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = w.Stop(sctx)
			scancel()
		}
		cancel()
		for range ws {
			<-done
		}
	}
	// Every worker passes its first clock round before the drain starts.
	for _, w := range ws {
		for w.Ready() != nil {
			if time.Since(t0) > c.Timeout {
				stopAll()
				return WorkersResult{}, fmt.Errorf("bench: scale workers: %d workers not ready in %v", n, c.Timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	startS := time.Since(t0).Seconds()
	before := db.Stats()
	cpu0, cpuOK := processCPU()
	mach0, _, machOK := machineCPU()
	start := time.Now()
	if err := q.Resume(ctx, taskType); err != nil {
		stopAll()
		return WorkersResult{}, err
	}
	select {
	case <-all:
	case <-time.After(c.Timeout):
		stopAll()
		return WorkersResult{}, fmt.Errorf("bench: scale workers: %d workers started %d of %d jobs in %v", n, started.Load(), total, c.Timeout)
	case <-ctx.Done():
		stopAll()
		return WorkersResult{}, ctx.Err()
	}
	// From the first start: a paused worker sees the resume at its next
	// pause read (up to a heartbeat period), which is not the drain's.
	el := time.Since(time.Unix(0, first.Load())).Seconds()
	resumeS := time.Unix(0, first.Load()).Sub(start).Seconds()
	cpu1, cpuOK1 := processCPU()
	mach1, _, machOK1 := machineCPU()
	d := db.Stats().Sub(before)
	var claims, claimAcks, acks int64
	for _, w := range ws {
		s := w.Stats()
		claims += s.ClaimBatches + s.EmptyClaims
		claimAcks += s.ClaimAcks
		acks += s.Completed
	}
	stopAll()
	per := func(v int64) float64 { return float64(v) / float64(total) }
	r := WorkersResult{Workers: n, Jobs: total, JobsPerSec: float64(total) / el, CommitsPer: per(d.Commits),
		ConflictsPer: per(d.Conflicts), ClaimsPer: per(claims), StartS: startS, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if acks > 0 {
		r.ClaimAcks = float64(claimAcks) / float64(acks)
	}
	// CPU is counted from the resume: the idle wait before the first start
	// is paused workers' polling, a small share.
	if cpuOK && cpuOK1 {
		r.CPUPer1kJobs = (cpu1 - cpu0) / float64(total) * 1000
		r.CPUPerWallS = (cpu1 - cpu0) / (el + resumeS)
	}
	if machOK && machOK1 {
		r.MachinePerS = (mach1 - mach0) / (el + resumeS)
	}
	return r, nil
}
