package bench

import (
	"fmt"
	"time"
)

// Mode is how work arrives.
type Mode string

// The modes.
const (
	// Backlog enqueues Config.Backlog jobs before the workers start and
	// measures how fast they drain it.
	Backlog Mode = "backlog"
	// Steady has producers enqueue at Config.Rate while the workers run.
	Steady Mode = "steady"
)

// Config is one workload. Every variant and worker count runs it.
type Config struct {
	Variants    []string      `json:"variants"`
	Workers     []int         `json:"workers"`
	Modes       []Mode        `json:"modes"`
	Concurrency int           `json:"concurrency"` // handler slots per worker
	Producers   int           `json:"producers"`
	Duration    Dist          `json:"duration"`
	Payload     int           `json:"payload_bytes"`
	DelayShare  float64       `json:"delay_share"` // share of jobs enqueued with a delay
	MaxDelay    time.Duration `json:"max_delay"`   // delays are uniform in (0, MaxDelay]
	FailShare   float64       `json:"fail_share"`  // share of jobs whose first attempt fails
	RetryDelay  time.Duration `json:"retry_delay"` // backoff before a failed job runs again
	Backlog     int           `json:"backlog"`
	Rate        float64       `json:"rate"` // jobs/s in steady mode, all producers together
	RunLength   time.Duration `json:"run_length"`
	Seed        uint64        `json:"seed"`
	Poll        time.Duration `json:"poll"` // idle wait between empty claims
	Lease       time.Duration `json:"lease"`
	// Reps runs every cell (mode, variant, worker count) this many times,
	// interleaved (the whole grid once, then again), so the table can show
	// each cell's spread.
	Reps int `json:"reps"`

	// Fairness run: a skewed steady load (see Fairness).
	FairWorkers   int           `json:"fair_workers"`
	FairRate      float64       `json:"fair_rate"`
	FairSpaces    int           `json:"fair_item_spaces"`
	FairHotFactor int           `json:"fair_hot_factor"`
	FairSlowShare float64       `json:"fair_slow_share"`
	FairSlow      time.Duration `json:"fair_slow"`
	FairRun       time.Duration `json:"fair_run_length"`
}

// Variants are the claim strategies, in report order.
var Variants = []string{"zones", "zones-16"}

// Full is the configuration docs/performance.md reports.
func Full() Config {
	return Config{
		Variants:    Variants,
		Workers:     []int{1, 4, 16, 64},
		Modes:       []Mode{Backlog, Steady},
		Concurrency: 8,
		Producers:   4,
		Duration:    Dist{Kind: "exponential", Mean: 20 * time.Millisecond},
		Payload:     100,
		DelayShare:  0.1,
		MaxDelay:    time.Second,
		FailShare:   0.05,
		RetryDelay:  100 * time.Millisecond,
		Backlog:     20000,
		Rate:        400,
		RunLength:   5 * time.Second,
		Seed:        1,
		Poll:        10 * time.Millisecond,
		Lease:       30 * time.Second,
		Reps:        3,

		FairWorkers:   2,
		FairRate:      300,
		FairSpaces:    10,
		FairHotFactor: 100,
		FairSlowShare: 0.05,
		FairSlow:      500 * time.Millisecond,
		FairRun:       8 * time.Second,
	}
}

// Short is the CI configuration: every variant, two worker counts, about
// a second and a half a run.
func Short() Config {
	c := Full()
	c.Workers = []int{1, 16}
	c.Backlog = 3000
	c.RunLength = 1500 * time.Millisecond
	c.FairRun = 2 * time.Second
	c.Reps = 1
	return c
}

// Validate rejects configurations that cannot run.
func (c Config) Validate() error {
	for _, v := range c.Variants {
		if _, err := strategyFor(v); err != nil {
			return err
		}
	}
	for _, m := range c.Modes {
		if m != Backlog && m != Steady {
			return fmt.Errorf("bench: mode %q: want backlog or steady", m)
		}
	}
	switch {
	case len(c.Workers) == 0:
		return fmt.Errorf("bench: no worker counts")
	case c.Concurrency < 1, c.Producers < 1, c.Reps < 1:
		return fmt.Errorf("bench: concurrency, producers and reps must be at least 1")
	case c.RunLength <= 0:
		return fmt.Errorf("bench: run length must be positive")
	case c.DelayShare < 0 || c.DelayShare > 1 || c.FailShare < 0 || c.FailShare > 1:
		return fmt.Errorf("bench: shares must be in [0,1]")
	case c.Payload < 0 || c.Payload > 90_000:
		return fmt.Errorf("bench: payload must be 0..90000 bytes")
	}
	for _, w := range c.Workers {
		if w < 1 {
			return fmt.Errorf("bench: worker count %d", w)
		}
	}
	return nil
}
