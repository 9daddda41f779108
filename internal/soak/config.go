package soak

import (
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Config is one soak run.
type Config struct {
	// Duration bounds the run: chaos for Duration minus one lease, then a
	// drain until every job is finished (at most a lease and a half more).
	Duration    time.Duration `json:"duration"`
	Producers   int           `json:"producers"`
	Rate        float64       `json:"rate"` // work jobs/s, all producers together
	Workers     int           `json:"workers"`
	Concurrency int           `json:"concurrency"`
	JobMean     time.Duration `json:"job_mean"` // exponential handler durations
	Lease       time.Duration `json:"lease"`
	// KillEvery is the mean time between kills of a random worker (each is
	// replaced by a new one at once).
	KillEvery time.Duration `json:"kill_every"`
	// Skew bounds each worker's clock offset, drawn uniformly in ±Skew.
	Skew time.Duration `json:"skew"`
	// PauseShare is the share of runs whose handler blocks past its lease.
	PauseShare     float64 `json:"pause_share"`
	TransientShare float64 `json:"transient_share"`
	PoisonShare    float64 `json:"poison_share"`
	PoisonAttempts int     `json:"poison_attempts"`
	// Faults per write commit.
	UnknownCommitted    float64 `json:"unknown_committed"`
	UnknownNotCommitted float64 `json:"unknown_not_committed"`
	Conflict            float64 `json:"conflict"`
	// 1031 transaction_timed_out and 1025 transaction_cancelled striking a
	// commit in flight, applied or not (kv.Faults): the outcome is unknown
	// and the transaction is dead, as after a timeout or cancel in FDB.
	TimedOutCommitted     float64 `json:"timed_out_committed"`
	TimedOutNotCommitted  float64 `json:"timed_out_not_committed"`
	CancelledCommitted    float64 `json:"cancelled_committed"`
	CancelledNotCommitted float64 `json:"cancelled_not_committed"`
	// LargeShare is the share of jobs carrying a payload of up to
	// LargeBytes (uniform), near quick's 90,000-byte limit.
	LargeShare float64 `json:"large_share"`
	LargeBytes int     `json:"large_bytes"`
	// ExhaustShare is the share of jobs with MaxAttempts 1 whose handler
	// freezes its worker past the lease: a claim finds their only attempt
	// spent by a holder that vanished and dead-letters them.
	ExhaustShare  float64 `json:"exhaust_share"`
	CronSchedules int     `json:"cron_schedules"`
	CronSpec      string  `json:"cron_spec"`
	// CronEditEvery is the mean time between edits of a random cron chain
	// while it runs: its spec changed, its task type changed, or the
	// schedule removed and registered again. Zero edits nothing. Chain 0
	// has MaxAttempts 1 and the worker of its first run is killed, so the
	// claim that dead-letters the exhausted occurrence must enqueue the
	// successor; edits leave chain 0 alone when there are others.
	CronEditEvery time.Duration `json:"cron_edit_every"`
	// FarSkew, when set, runs the first worker started that far ahead of
	// real time, beyond Skew: the worker runtime's time reference must find
	// it off once the others have joined (it joined first, so it is the
	// most senior) and have it stand by, with no violation. On by default
	// (5 s, half the minimum lease).
	FarSkew time.Duration `json:"far_skew"`
	Seed    uint64        `json:"seed"`
	// Verbose sends the queue's, workers' and cron's warnings to the log.
	Verbose bool `json:"-"`
}

// Default is the full soak.
func Default() Config {
	return Config{
		Duration: 30 * time.Second, Producers: 2, Rate: 80, Workers: 6, Concurrency: 4,
		JobMean: 10 * time.Millisecond, Lease: quick.MinLease, KillEvery: time.Second, Skew: time.Second,
		PauseShare: 0.01, TransientShare: 0.05, PoisonShare: 0.02, PoisonAttempts: 3,
		UnknownCommitted: 0.02, UnknownNotCommitted: 0.02, Conflict: 0.02,
		TimedOutCommitted: 0.005, TimedOutNotCommitted: 0.005, CancelledCommitted: 0.005, CancelledNotCommitted: 0.005,
		LargeShare: 0.03, LargeBytes: 89_000, ExhaustShare: 0.01,
		CronSchedules: 3, CronSpec: "@every 1s", CronEditEvery: 2 * time.Second, FarSkew: 5 * time.Second, Seed: 1,
	}
}

// Short is the CI soak, about 20 s.
func Short() Config {
	c := Default()
	c.Duration = 20 * time.Second
	c.Rate = 50
	return c
}

// Validate rejects configurations that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Lease < quick.MinLease:
		return fmt.Errorf("soak: lease %v is under quick's minimum %v", c.Lease, quick.MinLease)
	case c.Duration < c.Lease+5*time.Second:
		return fmt.Errorf("soak: duration %v leaves no chaos phase before a lease-long drain (want at least %v)", c.Duration, c.Lease+5*time.Second)
	case c.Workers < 1 || c.Concurrency < 1 || c.Producers < 1:
		return fmt.Errorf("soak: workers, concurrency and producers must be at least 1")
	case c.Skew < 0 || c.Skew > c.Lease/4:
		return fmt.Errorf("soak: skew %v must be within a quarter lease (two workers at ±skew would be half a lease apart, and the worker runtime stands by beyond an eighth)", c.Skew)
	case c.LargeShare > 0 && (c.LargeBytes < 1 || c.LargeBytes > quick.MaxPayloadSize-100):
		return fmt.Errorf("soak: large payloads of %d bytes do not fit quick's %d-byte limit with the job's own fields", c.LargeBytes, quick.MaxPayloadSize)
	case c.FarSkew < 0:
		return fmt.Errorf("soak: negative far skew %v", c.FarSkew)
	case c.PoisonAttempts < 1:
		return fmt.Errorf("soak: poison attempts must be at least 1")
	}
	return nil
}

// chaos is how long producers, kills and pauses run: the duration minus a
// lease and a second, so jobs stranded by the last kill vest again in time.
func (c Config) chaos() time.Duration { return max(c.Duration-c.Lease-time.Second, 5*time.Second) }

// pause is how long a paused handler blocks: past its lease even as seen
// by the most skewed workers.
func (c Config) pause() time.Duration { return c.Lease + 2*c.Skew + time.Second }

// exhaustPause is how long an exhausting handler freezes its worker: past
// the lease and skew with room for another worker's claim to find the job.
func (c Config) exhaustPause() time.Duration { return c.Lease + 2*c.Skew + c.FarSkew + 3*time.Second }
