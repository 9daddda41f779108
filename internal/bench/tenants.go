package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TenantsConfig is the noisy-neighbour workload of issue 11: one tenant
// (item space) with a huge backlog, and many small tenants with one job
// each, enqueued once the workers are busy with the backlog. What it
// measures is how long the small tenants' jobs wait to start.
type TenantsConfig struct {
	Variants    []string      `json:"variants"`
	Workers     int           `json:"workers"`
	Concurrency int           `json:"concurrency"` // handler slots per worker
	Backlog     int           `json:"backlog"`     // the big tenant's jobs
	Small       int           `json:"small"`       // small tenants, one job each
	SmallBatch  int           `json:"small_batch"` // small jobs per enqueue transaction
	Duration    Dist          `json:"duration"`    // handler time of every job
	Payload     int           `json:"payload"`     // bytes
	Warmup      time.Duration `json:"warmup"`      // workers run the backlog this long before the small jobs come
	Wait        time.Duration `json:"wait"`        // the longest the run waits for the small jobs to start
	Loaders     int           `json:"loaders"`     // goroutines enqueueing the backlog
	Seed        uint64        `json:"seed"`
	Poll        time.Duration `json:"poll"`
	Lease       time.Duration `json:"lease"`
}

// DefaultTenants is issue 11's figure: 1M jobs of one tenant, 1,000
// tenants with one job each, 16 workers.
func DefaultTenants() TenantsConfig {
	return TenantsConfig{
		Variants: []string{"zones", "zones-16"}, Workers: 16, Concurrency: 8,
		Backlog: 1_000_000, Small: 1000, SmallBatch: 100,
		Duration: Dist{Kind: "exponential", Mean: 20 * time.Millisecond}, Payload: 100,
		Warmup: time.Second, Wait: 30 * time.Second, Loaders: 4, Seed: 1,
		Poll: 10 * time.Millisecond, Lease: 30 * time.Second,
	}
}

// TenantsResult is one variant's figures.
type TenantsResult struct {
	Variant string `json:"variant"`
	Backlog int    `json:"backlog"`
	// PreloadS is how long enqueueing the backlog took.
	PreloadS float64 `json:"preload_s"`
	// SmallWait is enqueue-to-start of the small tenants' jobs that started.
	SmallWait Percentiles `json:"small_wait"`
	// SmallUnstarted counts small jobs that had not started when the run
	// gave up (Wait after they were enqueued); LongestMs then counts them
	// at the time the run ended, a lower bound on their wait.
	SmallUnstarted int     `json:"small_unstarted"`
	LongestMs      float64 `json:"longest_ms"`
	// BigJobsPerSec is the backlog's completions per second over the run.
	BigJobsPerSec float64  `json:"big_jobs_per_s"`
	Errors        int64    `json:"errors"`
	FirstError    string   `json:"first_error,omitempty"`
	Violations    []string `json:"violations,omitempty"`
}

func (c TenantsConfig) validate() error {
	for _, v := range c.Variants {
		if _, err := strategyFor(v); err != nil {
			return err
		}
	}
	if c.Workers < 1 || c.Concurrency < 1 || c.Backlog < 0 || c.Small < 1 || c.SmallBatch < 1 || c.Loaders < 1 || c.Wait <= 0 {
		return fmt.Errorf("bench: tenants: workers, concurrency, small, small batch, lanes, loaders and wait must be positive")
	}
	return nil
}

// benchConfig is the Config the shared env and worker loop read.
func (c TenantsConfig) benchConfig() Config {
	cfg := Full()
	cfg.Concurrency, cfg.Duration, cfg.Payload = c.Concurrency, c.Duration, c.Payload
	cfg.DelayShare, cfg.FailShare, cfg.Seed, cfg.Poll, cfg.Lease = 0, 0, c.Seed, c.Poll, c.Lease
	return cfg
}

// Tenants runs the workload once per variant, each on a fresh engine.
func Tenants(ctx context.Context, eng Engine, c TenantsConfig, log func(string, ...any)) ([]TenantsResult, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var out []TenantsResult
	for _, v := range c.Variants {
		r, err := tenantsOne(ctx, eng, c, v, log)
		if err != nil {
			return out, fmt.Errorf("tenants/%s: %w", v, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func tenantsOne(ctx context.Context, eng Engine, c TenantsConfig, variant string, log func(string, ...any)) (TenantsResult, error) {
	st, err := strategyFor(variant)
	if err != nil {
		return TenantsResult{}, err
	}
	db, space, closeDB, err := eng.open()
	if err != nil {
		return TenantsResult{}, err
	}
	defer closeDB()
	cfg := c.benchConfig()
	e, err := openEnv(ctx, db, space, cfg, tuneOptions(st))
	if err != nil {
		return TenantsResult{}, err
	}
	res := TenantsResult{Variant: variant, Backlog: c.Backlog}

	// The backlog: one shared meta stands for every one of its jobs.
	big := &jobMeta{space: "big", shared: true, dur: c.Duration.Mean}
	e.shared = big
	t0 := time.Now()
	if err := preloadBig(ctx, e, c, log); err != nil {
		return res, err
	}
	res.PreloadS = time.Since(t0).Seconds()
	log("tenants %s: %d backlog jobs enqueued in %.1fs", variant, c.Backlog, res.PreloadS)

	r := &run{e: e, st: st, mode: Steady, workers: c.Workers, drained: make(chan struct{})}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	names := make([]string, c.Workers)
	for i := range names {
		names[i] = fmt.Sprintf("w%02d", i)
	}
	e.waits.setOpen(true)
	for _, name := range names {
		r.startWorker(runCtx, &wg, st.newClaimer(e, name, names))
	}
	sleep(ctx, c.Warmup)

	// The small tenants, one job each.
	small := make([]*jobMeta, 0, c.Small)
	payload := make([]byte, c.Payload)
	for done := 0; done < c.Small; done += c.SmallBatch {
		n := min(c.SmallBatch, c.Small-done)
		jobs := make([]quick.NewJob, n)
		now := time.Now()
		for i := range jobs {
			m := &jobMeta{enq: now, space: "small", dur: c.Duration.Mean}
			m.vest.Store(now.UnixNano())
			jobs[i] = quick.NewJob{ID: quick.NewID(now), TaskType: e.taskType, ItemSpace: fmt.Sprintf("tenant-%05d", done+i), Payload: payload}
			e.metas.Store(jobs[i].ID, m)
			small = append(small, m)
		}
		if _, err := e.qEnq.Enqueue(ctx, jobs...); err != nil {
			return res, fmt.Errorf("bench: enqueue small tenants: %w", err)
		}
	}
	bigBefore := r.completed.Load()
	smallAt := time.Now()
	deadline := smallAt.Add(c.Wait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		started := 0
		for _, m := range small {
			if m.starts.Load() > 0 {
				started++
			}
		}
		if started == len(small) {
			break
		}
		sleep(ctx, 20*time.Millisecond)
	}
	end := time.Now()
	e.waits.setOpen(false)
	stop()
	wg.Wait()
	bigDone := r.completed.Load() - bigBefore

	var waits []time.Duration
	for _, m := range small {
		if m.starts.Load() == 0 {
			res.SmallUnstarted++
			res.LongestMs = max(res.LongestMs, ms(end.Sub(m.enq)))
		}
		if m.starts.Load() > 1 {
			e.violate("a small tenant's job started twice")
		}
	}
	e.waits.mu.Lock()
	waits = append(waits, e.waits.bySpace["small"]...)
	e.waits.mu.Unlock()
	res.SmallWait = summarise(waits)
	res.LongestMs = max(res.LongestMs, res.SmallWait.Max)
	// r.completed counts the backlog's completions (the shared meta) and
	// the small jobs'; the small ones are few.
	res.BigJobsPerSec = float64(bigDone) / end.Sub(smallAt).Seconds()
	res.Errors, res.FirstError = r.errors.Load(), r.firstErr
	e.violMu.Lock()
	res.Violations = append(res.Violations, e.violations...)
	e.violMu.Unlock()
	return res, nil
}

// preloadBig enqueues the big tenant's backlog from c.Loaders goroutines
// in transactions of 500 jobs.
func preloadBig(ctx context.Context, e *env, c TenantsConfig, log func(string, ...any)) error {
	const batch = 500
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	payload := make([]byte, c.Payload)
	lastLog := time.Now()
	for range c.Loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := next.Add(batch) - batch
				if from >= int64(c.Backlog) || ctx.Err() != nil {
					return
				}
				n := min(batch, c.Backlog-int(from))
				now := time.Now()
				jobs := make([]quick.NewJob, n)
				for i := range jobs {
					jobs[i] = quick.NewJob{ID: quick.NewID(now), TaskType: e.taskType, ItemSpace: "big-tenant", Payload: payload}
				}
				if _, err := e.qEnq.Enqueue(ctx, jobs...); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("bench: preload: %w", err)
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				if time.Since(lastLog) > 10*time.Second {
					lastLog = time.Now()
					log("  ... %d of %d", from+int64(n), c.Backlog)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
