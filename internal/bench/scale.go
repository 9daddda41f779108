package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// The scale simulation of issue 11, on memkv with a fake clock:
//
//   - Idle: W workers and T tenants whose jobs all vest in an hour. An idle
//     worker claims through the pointer index every MaxIdleSleep and keeps
//     no membership: besides its claims it runs the bounded clock check of package worker
//     (worker/clockguard.go: every 5 heartbeat periods one snapshot range read
//     of at most 64 sample slots and one blind Set), modelled here on keys
//     of the simulation's own.
//     The fake clock steps through simulated seconds, so the figures are
//     reads per worker per simulated second, whatever the machine.
//   - Claims: T tenants with vested jobs, W claimers claiming and acking
//     back to back (no handler time) on memkv with FDB's latencies injected
//     on the real clock, the queue's clock frozen (a fake that never moves,
//     so every job stays vested and no lease lapses): claim conflicts per
//     claim commit and jobs/s against W, until the engine saturates the
//     machine.

// ScaleIdleConfig is the idle simulation.
type ScaleIdleConfig struct {
	Workers int `json:"workers"`
	Tenants int `json:"tenants"`
	// Sample is how many of the workers run their idle routine in the
	// measured window (every worker joins; the per-worker cost depends on
	// the others only through what they store); 0 runs them all.
	Sample          int           `json:"sample"`
	SimFor          time.Duration `json:"sim_for"`
	HeartbeatPeriod time.Duration `json:"heartbeat_period"` // worker.Config default
	MaxIdleSleep    time.Duration `json:"max_idle_sleep"`   // worker.Config default
	Slots           int           `json:"slots"`            // Max of each claim
}

// IdleResult is one layout's idle cost, per worker per simulated second.
type IdleResult struct {
	Layout       string     `json:"layout"`
	Workers      int        `json:"workers"`
	Tenants      int        `json:"tenants"`
	Sampled      int        `json:"sampled"`
	SimSeconds   float64    `json:"sim_seconds"`
	PerWorkerSec kv.PerUnit `json:"per_worker_second"`
	WallS        float64    `json:"wall_s"`
}

// DefaultScaleIdle is issue 11's figure: 2,000 workers, 100,000 tenants.
func DefaultScaleIdle() ScaleIdleConfig {
	return ScaleIdleConfig{Workers: 2000, Tenants: 100_000, Sample: 200, SimFor: 10 * time.Second,
		HeartbeatPeriod: time.Second, MaxIdleSleep: 5 * time.Second, Slots: 8}
}

var simEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ScaleIdle runs the idle simulation. layout must be "zones", the one
// layout (the field stays in the results, so that old and new figures
// compare).
func ScaleIdle(ctx context.Context, c ScaleIdleConfig, layout string) (IdleResult, error) {
	if c.Workers < 1 || c.Tenants < 0 || c.SimFor <= 0 || c.HeartbeatPeriod <= 0 || c.MaxIdleSleep <= 0 {
		return IdleResult{}, fmt.Errorf("bench: scale idle: bad configuration %+v", c)
	}
	wall := time.Now()
	clk := clock.NewFake(simEpoch)
	raw := memkv.Open(memkv.Options{Clock: clk, Seed: 1})
	defer raw.Close()
	space := tuple.FromTuple(tuple.Tuple{"scale"})
	idle := kv.WithCounters(raw)
	opts := quick.Options{Clock: clk, Logger: quietLogger()}
	if layout != "zones" {
		return IdleResult{}, fmt.Errorf("bench: scale idle: layout %q (want zones)", layout)
	}
	qLoad, err := quick.Open(ctx, raw, space, opts)
	if err != nil {
		return IdleResult{}, err
	}
	q, err := quick.Open(ctx, idle, space, opts)
	if err != nil {
		return IdleResult{}, err
	}
	const taskType = "bench"
	// Every tenant has one job, vesting in an hour: the index holds T
	// entries, none vested.
	for done := 0; done < c.Tenants; done += 1000 {
		n := min(1000, c.Tenants-done)
		jobs := make([]quick.NewJob, n)
		for i := range jobs {
			jobs[i] = quick.NewJob{TaskType: taskType, ItemSpace: fmt.Sprintf("tenant-%06d", done+i), Delay: time.Hour, Payload: make([]byte, 100)}
		}
		if _, err := qLoad.Enqueue(ctx, jobs...); err != nil {
			return IdleResult{}, fmt.Errorf("bench: scale idle: preload: %w", err)
		}
	}
	sample := c.Sample
	if sample <= 0 || sample > c.Workers {
		sample = c.Workers
	}
	type simWorker struct {
		id        string
		nextBeat  time.Time
		nextClaim time.Time
	}
	// The zones worker's clock check: clockSlots sample slots, a round
	// every clockPeriods heartbeat periods.
	const clockSlots, clockPeriods = 64, 5
	slots := space.Sub("clock-slots")
	clockRound := func(id string, i int) error {
		return idle.Transact(ctx, func(tr kv.Transaction) error {
			if _, err := tr.Snapshot().GetRange(kv.PrefixRange(slots.Bytes()), kv.RangeOptions{Limit: clockSlots}).GetSliceWithError(); err != nil {
				return err
			}
			tr.Set(slots.Pack(tuple.Tuple{int64(i % clockSlots)}), tuple.Tuple{clk.Now().UnixMilli(), id}.Pack())
			return nil
		})
	}
	ws := make([]*simWorker, sample)
	for i := range ws {
		ws[i] = &simWorker{id: fmt.Sprintf("worker-%05d", i)}
	}
	// Stagger the workers over a period, as independent processes are.
	start := clk.Now()
	beatEvery := clockPeriods * c.HeartbeatPeriod
	{
		// Every worker has published its clock once before the window:
		// the slots are as full as they stay.
		err := raw.Transact(ctx, func(tr kv.Transaction) error {
			for i := range min(c.Workers, clockSlots) {
				tr.Set(slots.Pack(tuple.Tuple{int64(i)}), tuple.Tuple{clk.Now().UnixMilli(), fmt.Sprintf("worker-%05d", i)}.Pack())
			}
			return nil
		})
		if err != nil {
			return IdleResult{}, err
		}
	}
	for i, w := range ws {
		w.nextBeat = start.Add(beatEvery * time.Duration(i) / time.Duration(len(ws)))
		w.nextClaim = start.Add(c.MaxIdleSleep * time.Duration(i) / time.Duration(len(ws)))
	}
	{
		// A worker that has been idle a while: the queue has seen which
		// priorities hold pointers (quick reads a priority it has not
		// seen yet a little more the first time, once per process).
		if _, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: taskType, Holder: "warm-up", Max: c.Slots}); err != nil {
			return IdleResult{}, fmt.Errorf("bench: scale idle: claim: %w", err)
		}
	}
	before := idle.Stats()
	const step = 10 * time.Millisecond
	end := start.Add(c.SimFor)
	for now := start; now.Before(end); now = now.Add(step) {
		if ctx.Err() != nil {
			return IdleResult{}, ctx.Err()
		}
		clk.Set(now)
		for i, w := range ws {
			if !now.Before(w.nextBeat) {
				if err := clockRound(w.id, i); err != nil {
					return IdleResult{}, fmt.Errorf("bench: scale idle: beat: %w", err)
				}
				w.nextBeat = w.nextBeat.Add(beatEvery)
			}
			if now.Before(w.nextClaim) {
				continue
			}
			res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: taskType, Holder: w.id, Max: c.Slots})
			if err != nil {
				return IdleResult{}, fmt.Errorf("bench: scale idle: claim: %w", err)
			}
			if len(res.Jobs) > 0 {
				return IdleResult{}, fmt.Errorf("bench: scale idle: claimed a job that should not have vested")
			}
			next := res.NextVest
			// The worker sleeps until the next job vests, at most
			// MaxIdleSleep (worker.Config).
			d := c.MaxIdleSleep
			if !next.IsZero() {
				d = min(d, max(next.Sub(now), step))
			}
			w.nextClaim = now.Add(d)
		}
	}
	st := idle.Stats().Sub(before)
	simS := c.SimFor.Seconds()
	return IdleResult{Layout: layout, Workers: c.Workers, Tenants: c.Tenants, Sampled: sample, SimSeconds: simS,
		PerWorkerSec: st.Per(int64(float64(sample) * simS)), WallS: time.Since(wall).Seconds()}, nil
}

// ScaleClaimsConfig is the claim sweep.
type ScaleClaimsConfig struct {
	Workers   []int         `json:"workers"`
	Tenants   int           `json:"tenants"`
	PerTenant int           `json:"per_tenant"` // vested jobs per tenant
	Max       int           `json:"max"`        // jobs per claim
	RunFor    time.Duration `json:"run_for"`    // per worker count
	Seed      int64         `json:"seed"`
	// Peeks are the ClaimOptions.Peek values swept (zones only; 0 is
	// quick's default, 8).
	Peeks []int `json:"peeks"`
	// HeadPeeks are Peek values swept with ClaimOptions.PeekHead: every
	// claim reads the head of the pointer index, the choice before the
	// random start, for comparison in the same run.
	HeadPeeks []int `json:"head_peeks,omitempty"`
}

// DefaultScaleClaims sweeps 1 to 2,000 claimers over 100,000 tenants.
func DefaultScaleClaims() ScaleClaimsConfig {
	return ScaleClaimsConfig{Workers: []int{1, 4, 16, 64, 256, 1024, 2000}, Tenants: 100_000, PerTenant: 1, Max: 8,
		RunFor: 3 * time.Second, Seed: 1, Peeks: []int{0}}
}

// ClaimsResult is one layout at one claimer count.
type ClaimsResult struct {
	Layout       string  `json:"layout"`
	Workers      int     `json:"workers"`
	Peek         int     `json:"peek,omitempty"`
	PeekHead     bool    `json:"peek_head,omitempty"`
	JobsPerSec   float64 `json:"jobs_per_s"`
	ClaimsPerSec float64 `json:"claim_commits_per_s"`
	ConflictRate float64 `json:"conflicts_per_claim_commit"`
	JobsPerClaim float64 `json:"jobs_per_claim"`
	KeysPerJob   float64 `json:"claim_keys_read_per_job"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
	// CPUPerWallS is the process's CPU seconds (user + system, every
	// thread: claimers, acks, memkv, the runtime) per wall second of the
	// run; GOMAXPROCS is its ceiling. CPUPer1kJobs is the same CPU time
	// per 1,000 jobs acked. Both 0 where getrusage is not available.
	CPUPerWallS  float64 `json:"cpu_s_per_wall_s"`
	CPUPer1kJobs float64 `json:"cpu_s_per_1k_jobs"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	// MachinePerWallS is the CPU seconds of every process on the machine
	// (/proc/stat; Linux only, else 0) per wall second, NicedPerWallS the
	// part of it at positive nice: with MachinePerWallS at NumCPU the
	// machine is saturated and this process got CPUPerWallS of it.
	MachinePerWallS float64 `json:"machine_cpu_s_per_wall_s"`
	NicedPerWallS   float64 `json:"niced_cpu_s_per_wall_s"`
	NumCPU          int     `json:"num_cpu"`
	// RunQueueWaitPerWallS is the time this process's threads spent
	// runnable and waiting for a core (/proc/self/task/*/schedstat; Linux
	// only, else -1) per wall second: above 0 the process wanted more CPU
	// than the machine gave it.
	RunQueueWaitPerWallS float64 `json:"run_queue_wait_s_per_wall_s"`
}

// ScaleClaims runs the sweep for one layout: each claimer count on a
// fresh engine loaded with the same backlog.
func ScaleClaims(ctx context.Context, c ScaleClaimsConfig, layout string, log func(string, ...any)) ([]ClaimsResult, error) {
	if layout != "zones" {
		return nil, fmt.Errorf("bench: scale claims: layout %q (want zones)", layout)
	}
	type sweep struct {
		peek int
		head bool
	}
	var sweeps []sweep
	for _, p := range c.Peeks {
		sweeps = append(sweeps, sweep{p, false})
	}
	for _, p := range c.HeadPeeks {
		sweeps = append(sweeps, sweep{p, true})
	}
	if len(sweeps) == 0 {
		sweeps = []sweep{{0, false}}
	}
	var out []ClaimsResult
	for _, sw := range sweeps {
		for _, w := range c.Workers {
			r, err := scaleClaimsOne(ctx, c, layout, w, sw.peek, sw.head, log)
			if err != nil {
				return out, err
			}
			log("scale claims %s peek %d head %v: %d workers: %.0f jobs/s, %.4f conflicts/claim commit", layout, sw.peek, sw.head, w, r.JobsPerSec, r.ConflictRate)
			out = append(out, r)
		}
	}
	return out, nil
}

func scaleClaimsOne(ctx context.Context, c ScaleClaimsConfig, layout string, w, peek int, head bool, log func(string, ...any)) (ClaimsResult, error) {
	clk := clock.NewFake(simEpoch)
	raw := memkv.Open(memkv.Options{Latency: memkv.FDBLatency(), Seed: c.Seed})
	defer raw.Close()
	space := tuple.FromTuple(tuple.Tuple{"scale"})
	claimDB := kv.WithCounters(raw)
	opts := quick.Options{Clock: clk, Logger: quietLogger()}
	var qs [2]*quick.Queue
	for i, db := range []kv.Database{raw, claimDB} {
		q, err := quick.Open(ctx, db, space, opts)
		if err != nil {
			return ClaimsResult{}, err
		}
		qs[i] = q
	}
	qLoad, qClaim := qs[0], qs[1]
	const taskType = "bench"
	total := c.Tenants * c.PerTenant
	t0 := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var loadErr atomic.Pointer[error]
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(500)) - 500
				if from >= total || ctx.Err() != nil {
					return
				}
				n := min(500, total-from)
				jobs := make([]quick.NewJob, n)
				for i := range jobs {
					k := from + i
					jobs[i] = quick.NewJob{TaskType: taskType, ItemSpace: fmt.Sprintf("tenant-%06d", k%c.Tenants), Payload: make([]byte, 100)}
				}
				if _, err := qLoad.Enqueue(ctx, jobs...); err != nil {
					loadErr.Store(&err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := loadErr.Load(); p != nil {
		return ClaimsResult{}, fmt.Errorf("bench: scale claims: preload: %w", *p)
	}
	log("scale claims %s: %d jobs over %d tenants enqueued in %.1fs", layout, total, c.Tenants, time.Since(t0).Seconds())
	names := make([]string, w)
	for i := range names {
		names[i] = fmt.Sprintf("w%05d", i)
	}
	var jobs, errs atomic.Int64
	var firstErr atomic.Pointer[string]
	runCtx, cancel := context.WithTimeout(ctx, c.RunFor)
	defer cancel()
	cpu0, cpuOK := processCPU()
	mach0, niced0, machOK := machineCPU()
	rq0, rqOK := runQueueWait()
	start := time.Now()
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				res, err := qClaim.Consumer().Claim(runCtx, quick.ClaimOptions{TaskType: taskType, Holder: name, Max: c.Max, Peek: peek, PeekHead: head})
				ls := res.Jobs
				if err == nil && len(ls) > 0 {
					acks := make([]quick.Ack, len(ls))
					for i, l := range ls {
						acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
					}
					// Acks go through the uncounted handle: only the
					// claims' commits and conflicts are counted.
					_, err = qLoad.Ack(context.WithoutCancel(runCtx), acks...)
					if err == nil {
						jobs.Add(int64(len(ls)))
					}
				}
				if err != nil && runCtx.Err() == nil {
					errs.Add(1)
					s := err.Error()
					firstErr.CompareAndSwap(nil, &s)
					sleep(runCtx, 10*time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	cpu1, cpuOK1 := processCPU()
	mach1, niced1, machOK1 := machineCPU()
	rq1, rqOK1 := runQueueWait()
	cs := claimDB.Stats()
	r := ClaimsResult{Layout: layout, Workers: w, Peek: peek, PeekHead: head, JobsPerSec: float64(jobs.Load()) / el, ClaimsPerSec: float64(cs.Commits) / el, Errors: errs.Load(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU()}
	if machOK && machOK1 {
		r.MachinePerWallS, r.NicedPerWallS = (mach1-mach0)/el, (niced1-niced0)/el
	}
	r.RunQueueWaitPerWallS = -1
	if rqOK && rqOK1 {
		r.RunQueueWaitPerWallS = max(rq1-rq0, 0) / el
	}
	if cpuOK && cpuOK1 {
		r.CPUPerWallS = (cpu1 - cpu0) / el
		if n := jobs.Load(); n > 0 {
			r.CPUPer1kJobs = (cpu1 - cpu0) / float64(n) * 1000
		}
	}
	if cs.Commits > 0 {
		r.ConflictRate = float64(cs.Conflicts) / float64(cs.Commits)
		r.JobsPerClaim = float64(jobs.Load()) / float64(max(cs.Commits-cs.Conflicts, 1))
	}
	if n := jobs.Load(); n > 0 {
		r.KeysPerJob = float64(cs.KeysRead) / float64(n)
	}
	if n := jobs.Load(); n > int64(total)*9/10 {
		r.FirstError = fmt.Sprintf("the backlog of %d ran low (%d taken): raise --claim-tenants or shorten --run", total, n)
	}
	if p := firstErr.Load(); p != nil {
		r.FirstError = *p
	}
	return r, nil
}
