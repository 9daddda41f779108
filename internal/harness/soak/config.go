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

	// Tenants, zones and lanes (zones.go). Tenants is how many item spaces the work jobs are spread over besides
	// the empty one; HotShare of all work jobs go to the hot tenant, the
	// rest uniformly. Every OwnSpaceEvery-th tenant keeps its zones in a
	// subspace of its own (Options.ZoneSpace), outside the queue's.
	Tenants       int     `json:"tenants,omitempty"`
	HotShare      float64 `json:"hot_share,omitempty"`
	OwnSpaceEvery int     `json:"own_space_every,omitempty"`
	// ShortShare of the work jobs go to a task type run in short-job mode
	// (TaskTypeOptions.ShortJobs), the rest to one with per-job leases.
	ShortShare float64 `json:"short_share,omitempty"`
	// ResizeEvery is the mean time between SetZoneLanes calls on a random
	// zone (the hot one half the time), to a lane count in [1, MaxLanes].
	ResizeEvery time.Duration `json:"resize_every,omitempty"`
	MaxLanes    int           `json:"max_lanes,omitempty"`
	// LaneLease is the lane lease (quick.Options.LaneLeaseTime).
	LaneLease time.Duration `json:"lane_lease,omitempty"`
	// AutoIdemProducers is how many producers enqueue with
	// Options.AutomaticIdempotency (the kv option where the engine has it).
	AutoIdemProducers int `json:"auto_idem_producers,omitempty"`
	// Shares of the job kinds the zones configurations add: jobs that
	// checkpoint and fail on their first run (KindCheckpoint), jobs that
	// are dead-lettered and requeued (KindRequeue), jobs that run for
	// SlowFor (KindSlow, so that some are leased at any time), and delayed
	// jobs (up to DelayMax).
	CheckpointShare float64       `json:"checkpoint_share,omitempty"`
	RequeueShare    float64       `json:"requeue_share,omitempty"`
	SlowShare       float64       `json:"slow_share,omitempty"`
	SlowFor         time.Duration `json:"slow_for,omitempty"`
	DelayedShare    float64       `json:"delayed_share,omitempty"`
	DelayMax        time.Duration `json:"delay_max,omitempty"`
	// LongNames gives every tenant a name of quick.MaxItemSpaceLen bytes,
	// every work job a unique key of quick.MaxUniqueKeyLen bytes and every
	// failure a reason over the 2,000 bytes a job keeps: the longest keys
	// and values a claim, an ack and a hand-back carry (issue 22, item 5:
	// a claim of such jobs outgrew FDB's 10 MB).
	LongNames bool `json:"long_names,omitempty"`
	// Prefetch cancels (prefetch.go): PrefetchRate hold jobs a second go
	// to a task type that every worker runs one at a time (Concurrency 1,
	// so a second claimed job waits for the slot), each holding its slot
	// for PrefetchHold, longer than the lease keeper's renewal point (two
	// thirds of the lease): a waiting job's loss is learned while it
	// waits. Every CancelEvery the harness cancels jobs that are leased
	// and not started (prefetched): none may start once its worker knows.
	PrefetchRate float64       `json:"prefetch_rate,omitempty"`
	PrefetchHold time.Duration `json:"prefetch_hold,omitempty"`
	CancelEvery  time.Duration `json:"cancel_every,omitempty"`
	// BatchShare of the producers' enqueues are batches of 2 to 6 jobs
	// (batches.go) that mix given and generated IDs and repeat IDs: an
	// earlier call's first ID (its marker's name), IDs that marker lists,
	// and the job before in the batch. A repeat must be answered
	// duplicate under its own ID, and the batch's new jobs stored.
	BatchShare float64 `json:"batch_share,omitempty"`
	// UnpointEvery is the mean time between lanes stripped of their
	// pointer (unpoint.go), as a copied tenant subspace is: the harness
	// deletes an unleased lane's pointer entry and enqueues into the lane
	// until the cover has repaired it. Its jobs must all come back.
	UnpointEvery time.Duration `json:"unpoint_every,omitempty"`
	// Limits (limits.go): tenant t01 gets a concurrency limit of 1 and t02
	// one of 5 on every work type, t05 a rate on the per-job type, set
	// before the workers start and swapped (1 and 5, two rates) every
	// LimitEvery while they run. Needs Tenants > 5.
	Limits     bool          `json:"limits,omitempty"`
	LimitEvery time.Duration `json:"limit_every,omitempty"`
	// Moves (moves.go): every MoveEvery on average the mover takes a
	// tenant (not the empty, hot, limited or unpointable ones) and, in
	// turn, moves it within the database, moves it to a second database
	// served by AwayWorkers workers of its own and MoveStay later back,
	// moves it to a third that nothing serves and MoveStay later copies it
	// back byte for byte and adopts it, or deletes a tenant it made for
	// that. Zero moves nothing.
	MoveEvery   time.Duration `json:"move_every,omitempty"`
	MoveStay    time.Duration `json:"move_stay,omitempty"`
	AwayWorkers int           `json:"away_workers,omitempty"`
	// Backoff is the retry delay of failed jobs; default 200 ms.
	Backoff time.Duration `json:"backoff,omitempty"`
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
		PrefetchRate: 1.5, PrefetchHold: 7500 * time.Millisecond, CancelEvery: 300 * time.Millisecond,
		BatchShare: 0.1, UnpointEvery: 2 * time.Second,
	}
}

// Short is the CI soak, about 20 s.
func Short() Config {
	c := Default()
	c.Duration = 20 * time.Second
	c.Rate = 50
	return c
}

// Zones is the full soak with tenants: 40 tenants with one hot, a
// third of them in subspaces of their own, lanes resized while workers
// run, a short-job task type beside the per-job one, and one of the two
// producers on automatic idempotency.
func Zones() Config {
	c := Default()
	c.Tenants, c.HotShare, c.OwnSpaceEvery = 40, 0.4, 3
	c.ShortShare = 0.3
	c.ResizeEvery, c.MaxLanes = 700*time.Millisecond, 8
	c.LaneLease = 4 * time.Second
	c.AutoIdemProducers = 1
	c.CheckpointShare, c.RequeueShare = 0.02, 0.02
	c.SlowShare, c.SlowFor = 0.01, 5*time.Second
	c.DelayedShare, c.DelayMax = 0.05, 3*time.Second
	c.Backoff = 500 * time.Millisecond
	c.LongNames = true
	c.Limits, c.LimitEvery = true, 4*time.Second
	c.MoveEvery, c.MoveStay, c.AwayWorkers = time.Second, time.Second, 2
	return c
}

// ShortZones is the CI soak with tenants, about 25 s.
func ShortZones() Config {
	c := Zones()
	c.Duration = 22 * time.Second
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
	case c.Tenants < 0 || c.HotShare < 0 || c.HotShare > 1 || c.OwnSpaceEvery < 0:
		return fmt.Errorf("soak: tenants %d, hot share %v, own space every %d: want non-negative, share at most 1", c.Tenants, c.HotShare, c.OwnSpaceEvery)
	case c.ResizeEvery > 0 && (c.MaxLanes < 1 || c.MaxLanes > 64):
		return fmt.Errorf("soak: max lanes %d is outside [1, 64]", c.MaxLanes)
	case c.LaneLease != 0 && (c.LaneLease < time.Second || c.LaneLease > time.Minute):
		return fmt.Errorf("soak: lane lease %v is outside quick's [1s, 1m]", c.LaneLease)
	case c.Skew > c.laneLease()/4:
		return fmt.Errorf("soak: skew %v must be within a quarter of the lane lease %v: workers whose clocks are further apart take each other's live lanes over", c.Skew, c.laneLease())
	case c.SlowShare > 0 && (c.SlowFor <= 0 || c.SlowFor >= c.Lease):
		return fmt.Errorf("soak: slow jobs of %v: want a positive duration under the lease %v", c.SlowFor, c.Lease)
	case c.PrefetchRate > 0 && (c.PrefetchHold <= c.Lease*2/3 || c.PrefetchHold >= c.Lease):
		return fmt.Errorf("soak: prefetch hold %v: want between two thirds of the lease (the keeper's renewal point) and the lease %v", c.PrefetchHold, c.Lease)
	case c.BatchShare < 0 || c.BatchShare > 1:
		return fmt.Errorf("soak: batch share %v is outside [0, 1]", c.BatchShare)
	case c.Limits && c.Tenants < 6:
		return fmt.Errorf("soak: limits need at least 6 tenants (t01, t02 and t05 are limited), have %d", c.Tenants)
	case c.MoveEvery > 0 && c.Tenants < 5:
		return fmt.Errorf("soak: moves need tenants besides the hot and limited ones, have %d tenants", c.Tenants)
	case c.MoveEvery < 0 || c.MoveStay < 0 || c.AwayWorkers < 0:
		return fmt.Errorf("soak: negative move interval %v, stay %v or away workers %d", c.MoveEvery, c.MoveStay, c.AwayWorkers)
	case c.DelayedShare > 0 && (c.DelayMax <= 0 || c.DelayMax > c.chaos()):
		return fmt.Errorf("soak: delayed jobs of up to %v: want a positive delay within the chaos phase %v", c.DelayMax, c.chaos())
	}
	return nil
}

// ownSpaces counts the tenants whose zones are in subspaces of their own.
func (c Config) ownSpaces() int {
	if c.OwnSpaceEvery <= 0 {
		return 0
	}
	n := 0
	for i := range c.Tenants {
		if i%c.OwnSpaceEvery == 1 {
			n++
		}
	}
	return n
}

// laneLease is the lane lease (quick's default when unset).
func (c Config) laneLease() time.Duration {
	if c.LaneLease > 0 {
		return c.LaneLease
	}
	return 5 * time.Second
}

// awayWorkers is how many workers serve the mover's away database.
func (c Config) awayWorkers() int { return max(c.AwayWorkers, 1) }

// backoff is the retry delay of failed jobs.
func (c Config) backoff() time.Duration {
	if c.Backoff > 0 {
		return c.Backoff
	}
	return 200 * time.Millisecond
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
