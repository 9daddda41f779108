package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// config sizes the workloads.
type config struct {
	Jobs          int           `json:"jobs"`              // enqueued, then drained
	Batch         int           `json:"batch"`             // jobs per bulk enqueue
	Slots         int           `json:"slots"`             // handler slots, over all worker processes
	Procs         int           `json:"procs"`             // worker processes (1: the worker runs in this process)
	IdleSamples   int           `json:"idle_samples"`      // enqueue-to-start samples at idle
	IdleInterval  time.Duration `json:"idle_interval_ns"`  // mean gap between idle samples
	Rate          float64       `json:"rate"`              // steady arrivals, jobs/s
	SteadyFor     time.Duration `json:"steady_for_ns"`     // steady run length
	Producers     int           `json:"producers"`         // goroutines enqueueing in steady mode
	PhaseTimeout  time.Duration `json:"phase_timeout_ns"`  // bound on each phase
	SettleTimeout time.Duration `json:"settle_timeout_ns"` // wait for late starts after the steady run
}

// result is one repetition of every workload on one system. CPU figures
// are CPU-seconds per 1,000 jobs, client plus server processes.
type result struct {
	EnqueueRate   float64  `json:"enqueue_jobs_per_s"`
	EnqueueCPU    cpuTimes `json:"enqueue_cpu_s"`
	DrainRate     float64  `json:"drain_jobs_per_s"`
	DrainCPU      cpuTimes `json:"drain_cpu_s"`
	IdleP50       float64  `json:"idle_p50_ms"`
	IdleP99       float64  `json:"idle_p99_ms"`
	IdleSamples   int      `json:"idle_samples"`
	SteadyRate    float64  `json:"steady_jobs_per_s"`
	SteadyStarted int      `json:"steady_started"`
	SteadyEnq     int      `json:"steady_enqueued"`
	SteadyP99     float64  `json:"steady_p99_ms"`
	SteadyCPU     cpuTimes `json:"steady_cpu_s"`
	Errors        []string `json:"errors,omitempty"`
}

func per1k(c cpuTimes, jobs int) float64 {
	if jobs == 0 {
		return math.NaN()
	}
	return c.total() / float64(jobs) * 1000
}

// recorder collects handler starts: how many, when the last one was, and
// each one's enqueue-to-start latency.
type recorder struct {
	mu        sync.Mutex
	lat       []time.Duration
	starts    []int64 // Unix nanoseconds, with lat
	started   atomic.Int64
	lastStart atomic.Int64
	want      atomic.Int64
	done      chan struct{}
	doneOnce  sync.Once
	keepLat   bool
}

func newRecorder(want int, keepLat bool) *recorder {
	r := &recorder{done: make(chan struct{}), keepLat: keepLat}
	r.want.Store(int64(want))
	return r
}

// lower sets a smaller target (jobs whose enqueue failed never start).
func (r *recorder) lower(want int64) {
	r.want.Store(want)
	if r.started.Load() >= want {
		r.doneOnce.Do(func() { close(r.done) })
	}
}

// onStart records a start at at (Unix nanoseconds, stamped by the handler).
// Starts from several worker processes arrive out of order, so lastStart
// keeps the latest.
func (r *recorder) onStart(stamp, at int64) {
	if r.keepLat {
		r.mu.Lock()
		r.lat = append(r.lat, time.Duration(at-stamp))
		r.starts = append(r.starts, at)
		r.mu.Unlock()
	}
	for last := r.lastStart.Load(); at > last && !r.lastStart.CompareAndSwap(last, at); last = r.lastStart.Load() {
	}
	if r.started.Add(1) >= r.want.Load() {
		r.doneOnce.Do(func() { close(r.done) })
	}
}

// startsBetween counts the starts in [from, to).
func (r *recorder) startsBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.starts {
		if t >= from.UnixNano() && t < to.UnixNano() {
			n++
		}
	}
	return n
}

func (r *recorder) latencies() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.lat...)
}

// wait waits until want jobs have started or timeout.
func (r *recorder) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("%d of %d jobs started within %s", r.started.Load(), r.want.Load(), timeout)
	}
}

// runAll runs the four workloads on sys once. A failed workload is
// recorded and the next one still runs, so one system's trouble leaves the
// others' figures intact.
func runAll(ctx context.Context, sys system, cfg config, rng *rand.Rand) result {
	var res result
	fail := func(phase string, err error) {
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", phase, err))
	}
	res.EnqueueRate, res.DrainRate = math.NaN(), math.NaN()
	res.IdleP50, res.IdleP99 = math.NaN(), math.NaN()
	res.SteadyRate, res.SteadyP99 = math.NaN(), math.NaN()
	if err := enqueueDrain(ctx, sys, cfg, &res); err != nil {
		fail("enqueue/drain", err)
	}
	if err := idle(ctx, sys, cfg, rng, &res); err != nil {
		fail("idle latency", err)
	}
	if err := steady(ctx, sys, cfg, &res); err != nil {
		fail("steady", err)
	}
	return res
}

// settle lets the previous phase's garbage and background work die down
// so that it is not billed to the next measurement.
func settle() {
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
}

// enqueueDrain: bulk enqueue of cfg.Jobs in batches of cfg.Batch from one
// goroutine, then a drain with cfg.Slots handler slots. The drain's clock
// and CPU run from the worker's start until its graceful stop has
// returned, so that completions still buffered when the last handler
// starts are paid for; its rate is jobs over start-to-last-handler-start.
func enqueueDrain(ctx context.Context, sys system, cfg config, res *result) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	if err := sys.Reset(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	settle()
	roots := sys.ServerPIDs()
	c0, err := sampleCPU(roots)
	if err != nil {
		return err
	}
	t0 := time.Now()
	stamps := make([]int64, 0, cfg.Batch)
	for done := 0; done < cfg.Jobs; {
		n := min(cfg.Batch, cfg.Jobs-done)
		stamps = stamps[:0]
		now := time.Now().UnixNano()
		for range n {
			stamps = append(stamps, now)
		}
		if err := sys.EnqueueBatch(ctx, stamps); err != nil {
			return fmt.Errorf("enqueue after %d jobs: %w", done, err)
		}
		done += n
	}
	elapsed := time.Since(t0)
	c1, err := sampleCPU(roots)
	if err != nil {
		return err
	}
	res.EnqueueRate = float64(cfg.Jobs) / elapsed.Seconds()
	res.EnqueueCPU = c1.sub(c0)

	settle()
	rec := newRecorder(cfg.Jobs, false)
	c0, err = sampleCPU(roots)
	if err != nil {
		return err
	}
	t0 = time.Now()
	if err := sys.Start(ctx, cfg.Slots, rec.onStart); err != nil {
		return err
	}
	waitErr := rec.wait(ctx, cfg.PhaseTimeout)
	stopErr := sys.Stop(ctx)
	c1, err = sampleCPU(roots)
	if err != nil {
		return err
	}
	if waitErr != nil || stopErr != nil {
		return errors.Join(waitErr, stopErr)
	}
	res.DrainRate = float64(cfg.Jobs) / time.Duration(rec.lastStart.Load()-t0.UnixNano()).Seconds()
	res.DrainCPU = c1.sub(c0)
	return nil
}

// warmUp starts the worker and waits for one job to run, so that worker
// start-up (registration, leader election, first fetch) is not measured.
func warmUp(ctx context.Context, sys system, cfg config, onStart startFunc) error {
	first := make(chan struct{})
	var once sync.Once
	if err := sys.Start(ctx, cfg.Slots, func(t, at int64) {
		if t == 0 {
			once.Do(func() { close(first) })
			return
		}
		onStart(t, at)
	}); err != nil {
		return err
	}
	if err := sys.Enqueue(ctx, 0); err != nil {
		return fmt.Errorf("warm-up enqueue: %w", err)
	}
	select {
	case <-first:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.PhaseTimeout):
		return errors.New("warm-up job did not start")
	}
}

// idle: one job at a time onto an idle queue, with gaps drawn uniformly
// from [interval/2, 3·interval/2) so that samples do not lock onto a
// poll period; latency is from the start of the enqueue call to the
// handler's start. Samples do not wait for each other, so a system that
// polls once a second still finishes in about samples × interval.
func idle(ctx context.Context, sys system, cfg config, rng *rand.Rand, res *result) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	if err := sys.Reset(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	settle()
	rec := newRecorder(cfg.IdleSamples, true)
	if err := warmUp(ctx, sys, cfg, rec.onStart); err != nil {
		return errors.Join(err, sys.Stop(ctx))
	}
	var err error
	for i := 0; i < cfg.IdleSamples && err == nil; i++ {
		gap := cfg.IdleInterval/2 + time.Duration(rng.Int64N(int64(cfg.IdleInterval)+1))
		time.Sleep(gap)
		err = sys.Enqueue(ctx, time.Now().UnixNano())
	}
	if err == nil {
		err = rec.wait(ctx, cfg.SettleTimeout)
	}
	err = errors.Join(err, sys.Stop(ctx))
	lat := rec.latencies()
	res.IdleSamples = len(lat)
	res.IdleP50, res.IdleP99 = percentile(lat, 50), percentile(lat, 99)
	return err
}

// steady: cfg.Rate jobs/s for cfg.SteadyFor, each a single enqueue made by
// one of cfg.Producers goroutines as its arrival time comes (an arrival a
// busy producer pool cannot take yet waits, and its latency counts from
// when its enqueue call starts). The achieved rate is the rate of starts
// in the arrival window once the first second (a fifth of a shorter run)
// is past: a system that keeps up shows the arrival rate whatever its
// latency, one that falls behind shows what it sustains. CPU runs from the
// first arrival until every enqueued job has started (or the settle
// timeout), the worker already warm, and is divided by the jobs started.
func steady(ctx context.Context, sys system, cfg config, res *result) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	if err := sys.Reset(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	settle()
	total := int(cfg.Rate * cfg.SteadyFor.Seconds())
	rec := newRecorder(total, true)
	if err := warmUp(ctx, sys, cfg, rec.onStart); err != nil {
		return errors.Join(err, sys.Stop(ctx))
	}
	roots := sys.ServerPIDs()
	c0, err := sampleCPU(roots)
	if err != nil {
		return errors.Join(err, sys.Stop(ctx))
	}
	arrivals := make(chan struct{}, total)
	var enqueued atomic.Int64
	var enqErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range cfg.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range arrivals {
				if err := sys.Enqueue(ctx, time.Now().UnixNano()); err != nil {
					errOnce.Do(func() { enqErr = err })
					continue
				}
				enqueued.Add(1)
			}
		}()
	}
	t0 := time.Now()
	for i := range total {
		if ctx.Err() != nil {
			break
		}
		due := t0.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		arrivals <- struct{}{}
	}
	close(arrivals)
	wg.Wait()
	rec.lower(enqueued.Load()) // a failed enqueue has no start to wait for
	waitErr := rec.wait(ctx, cfg.SettleTimeout)
	c1, err := sampleCPU(roots)
	stopErr := sys.Stop(ctx)
	started := int(rec.started.Load())
	res.SteadyEnq, res.SteadyStarted = int(enqueued.Load()), started
	if started > 0 {
		skip := min(time.Second, cfg.SteadyFor/5)
		res.SteadyRate = float64(rec.startsBetween(t0.Add(skip), t0.Add(cfg.SteadyFor))) / (cfg.SteadyFor - skip).Seconds()
	}
	res.SteadyP99 = percentile(rec.latencies(), 99)
	if err == nil {
		res.SteadyCPU = c1.sub(c0)
	}
	return errors.Join(enqErr, waitErr, err, stopErr)
}
