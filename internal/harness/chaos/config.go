package chaos

import (
	"errors"
	"fmt"
	"time"
)

// Config is one chaos run.
type Config struct {
	// Subspace is the tuple prefix (workermain -subspace syntax) the run's
	// data goes under, plus a random run id.
	Subspace string `json:"subspace"`
	// Workers are the worker processes, Concurrency the handler slots of
	// each task type in each.
	Workers     int `json:"workers"`
	Concurrency int `json:"concurrency"`
	// Producers enqueue Rate jobs/s together, Batch per transaction.
	Producers int     `json:"producers"`
	Rate      float64 `json:"rate"`
	Batch     int     `json:"batch"`
	// Shares of the work types (the rest is TypeLease).
	ShortShare  float64 `json:"short_share"`
	CkptShare   float64 `json:"ckpt_share"`
	PoisonShare float64 `json:"poison_share"`
	// JobMs is how long a job (each step of a TypeCkpt job) sleeps;
	// CkptSteps how many steps a TypeCkpt job has.
	JobMs     int64 `json:"job_ms"`
	CkptSteps int   `json:"ckpt_steps"`
	// CronChains chains of CronSpec.
	CronChains int    `json:"cron_chains"`
	CronSpec   string `json:"cron_spec"`
	// Baseline is the healthy time before the first fault; Duration the
	// chaos after it (producers run through both); FaultEvery the pause
	// between two faults; Downtime how long a killed process stays dead.
	Baseline   time.Duration `json:"baseline"`
	Duration   time.Duration `json:"duration"`
	FaultEvery time.Duration `json:"fault_every"`
	Downtime   time.Duration `json:"downtime"`
	// MinBatches keeps the producers (and the faults) running past
	// Baseline+Duration until they have attempted that many transactions,
	// for at most MaxOvertime more: a run on a starved machine then still
	// exercises what it checks, however slow its producers are. 0: none.
	MinBatches  int           `json:"min_batches,omitempty"`
	MaxOvertime time.Duration `json:"max_overtime,omitempty"`
	// TxTimeout bounds each producer transaction (its retries included):
	// during a recovery some fail, and the checker must find none of their
	// jobs.
	TxTimeout time.Duration `json:"tx_timeout"`
	// DrainTimeout bounds the wait for every committed job to finish.
	DrainTimeout time.Duration `json:"drain_timeout"`
	// RecoverTimeout bounds the wait for the cluster to be healthy again
	// after a fault.
	RecoverTimeout time.Duration `json:"recover_timeout"`
	Seed           uint64        `json:"seed"`
	// Keep leaves the run's keys in the database.
	Keep bool `json:"keep"`
}

// Short is the CI run: a few minutes, every fault once.
func Short() Config {
	return Config{
		Subspace: "chaos", Workers: 4, Concurrency: 8, Producers: 2, Rate: 30, Batch: 10,
		ShortShare: 0.3, CkptShare: 0.15, PoisonShare: 0.02, JobMs: 20, CkptSteps: 4,
		CronChains: 2, CronSpec: "@every 2s",
		Baseline: 20 * time.Second, Duration: 3 * time.Minute, FaultEvery: 5 * time.Second, Downtime: 3 * time.Second,
		TxTimeout: 10 * time.Second, DrainTimeout: 3 * time.Minute, RecoverTimeout: 3 * time.Minute, Seed: 1,
	}
}

// Full is the run by hand (docs/fdb.md): 30 minutes of faults after a
// minute's baseline, 65 jobs/s (over 100,000 jobs), a fault every 10 s
// plus the fault's own time (each round of the schedule kills three
// processes, and the first the whole cluster too: over 20 kills).
func Full() Config {
	c := Short()
	c.Producers, c.Rate = 4, 65
	c.Baseline, c.Duration, c.FaultEvery = time.Minute, 30*time.Minute, 10*time.Second
	c.DrainTimeout = 10 * time.Minute
	return c
}

// Validate checks c.
func (c Config) Validate() error {
	var errs []error
	if c.Subspace == "" {
		errs = append(errs, errors.New("no subspace"))
	}
	if c.Workers < 1 || c.Concurrency < 1 || c.Producers < 1 || c.Batch < 1 || c.Batch > MaxBatch {
		errs = append(errs, fmt.Errorf("want workers, concurrency, producers >= 1 and 1 <= batch <= %d", MaxBatch))
	}
	if c.Rate <= 0 {
		errs = append(errs, errors.New("rate must be positive"))
	}
	if c.ShortShare < 0 || c.CkptShare < 0 || c.PoisonShare < 0 || c.ShortShare+c.CkptShare+c.PoisonShare > 1 {
		errs = append(errs, errors.New("shares must be >= 0 and add up to at most 1"))
	}
	if c.JobMs < 0 || c.CkptSteps < 1 {
		errs = append(errs, errors.New("want job-ms >= 0 and ckpt-steps >= 1"))
	}
	if c.CronChains < 0 || (c.CronChains > 0 && c.CronSpec == "") {
		errs = append(errs, errors.New("cron chains need a spec"))
	}
	if c.Duration <= 0 || c.Baseline < 0 || c.FaultEvery < 0 || c.Downtime < 0 {
		errs = append(errs, errors.New("want duration > 0, baseline, fault-every, downtime >= 0"))
	}
	if c.TxTimeout <= 0 || c.DrainTimeout <= 0 || c.RecoverTimeout <= 0 {
		errs = append(errs, errors.New("timeouts must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

// MaxBatch bounds the jobs of one producer transaction: each adds its
// queue keys and one app record.
const MaxBatch = 100
