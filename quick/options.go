package quick

import (
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Priority orders vested jobs: a worker claims every vested High job it sees
// before any Normal one, and Normal before Low. Each level is its own range in
// every lane, so a backlog of low-priority jobs never stands in front of a
// high-priority one. The levels are consecutive ranges of a lane, High
// first, so a claim reads all three with one range read per lane (a second
// read only for a level hidden behind future keys of a higher one). The
// zero value means Normal.
type Priority int64

// The priority levels.
const (
	High   Priority = 1
	Normal Priority = 2
	Low    Priority = 3
)

// priorities lists the levels in the order claims take them.
const numPriorities = 3

var priorities = [numPriorities]Priority{High, Normal, Low}

func (p Priority) normalize() (Priority, error) {
	if p == 0 {
		return Normal, nil
	}
	if p < High || p > Low {
		return 0, fmt.Errorf("%w: %d (want High, Normal or Low)", ErrInvalidPriority, int64(p))
	}
	return p, nil
}

func (p Priority) String() string {
	switch p {
	case High:
		return "high"
	case Normal:
		return "normal"
	case Low:
		return "low"
	}
	return fmt.Sprintf("priority(%d)", int64(p))
}

// ParsePriority reads "high", "normal" or "low".
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "high", "1":
		return High, nil
	case "normal", "", "2":
		return Normal, nil
	case "low", "3":
		return Low, nil
	}
	return 0, fmt.Errorf("%w: %q (want high, normal or low)", ErrInvalidPriority, s)
}

// Limits on what one job may hold. A record is one FDB value, at most
// 100,000 bytes; the rest of the record needs room too.
const (
	MaxTaskTypeLen   = 128
	MaxPayloadSize   = 90_000
	MaxCheckpointLen = kv.MaxValueSize
	MaxUniqueKeyLen  = 512
	MaxItemSpaceLen  = 256
	maxErrorLen      = 2_000
	maxHolderLen     = 256
	// MinLease keeps a lease safe against FDB's 5-second transaction limit:
	// a claim may take up to 5 s to commit, and the lease keeper needs time
	// to renew before expiry.
	MinLease = 10 * time.Second
)

// MaxTagLen is FDB's limit on a transaction tag (the client knob
// MAX_TRANSACTION_TAG_LENGTH, 255 in release-7.3's ClientKnobs.cpp, pinned
// by the kv conformance suite; a longer tag fails with tag_too_long), for
// ClaimOptions.Tag and worker.HandlerOptions.Tag alike.
const MaxTagLen = 255

// Options configure a Queue. The zero value is usable.
type Options struct {
	// Clock is the queue's time; tests inject a clock.Fake. Default real.
	Clock clock.Clock
	// MaxLease caps any lease (claim or extension), so a job whose holder
	// vanished runs again within it. Default 15 minutes.
	MaxLease time.Duration
	// IdempotencyWindow is how long the marker of an enqueued job ID is kept
	// after the ID's time, so that a retried enqueue finds the job even when
	// it already ran. IDs older than half the window are refused. Default 1 h.
	IdempotencyWindow time.Duration
	// MaxAttempts is the default for jobs that set none. Default 25.
	MaxAttempts int
	// Backoff computes the delay before retrying a failed job that failed
	// on attempt (1 for its first run). Default DefaultBackoff, capped at
	// 10 minutes.
	Backoff func(attempt int) time.Duration
	// TaskTypes holds per-task-type policy, over MaxAttempts and Backoff.
	TaskTypes map[string]TaskTypeOptions
	// DeadRetention bounds the dead letters kept per task type.
	DeadRetention Retention
	// Logger receives the queue's logs. Default slog.Default().
	Logger *slog.Logger
	// DisableWakeOnEnqueue stops enqueue from waking idle workers. By
	// default an enqueue of a job that vests now makes one read of its task
	// type's sleep key (internal/wake), alongside its other reads, and adds one
	// atomic add to the wake key only when a worker sleeps on it.
	// The read is serializable on purpose: a worker that registers its sleep
	// meanwhile makes the enqueue conflict and retry, now waking it, where a
	// snapshot read would miss it. With it set, workers find new jobs by
	// polling alone, and enqueues never conflict with sleeping workers.
	DisableWakeOnEnqueue bool
	// WaitableTypes lists task types whose every job is waitable (as with
	// NewJob.Waitable): their outcomes are kept, as a history of finished
	// jobs, for OutcomeRetention. Each such job costs one more key written
	// when it finishes (about 40 bytes); other types pay nothing.
	WaitableTypes []string
	// OutcomeRetention is how long a recorded outcome is kept after the
	// job's creation (the time in its ID) before PurgeOutcomes may delete
	// it. Default 24 h.
	OutcomeRetention time.Duration

	// ZoneSpace places a tenant's zones: the subspace under
	// which the queue keeps the jobs of ItemSpace itemSpace, one zone per
	// task type below it. Put it inside the tenant's own subspace, next to
	// its data, so that copying or clearing that subspace carries its jobs
	// along. It must be a pure function of itemSpace, the same in every
	// process, and its subspaces must not overlap each other or the
	// queue's own. Nil keeps zones under the queue's subspace, at
	// S (2, "z", itemSpace).
	ZoneSpace func(itemSpace string) tuple.Subspace
	// ZoneLanes is how many hash lanes a new zone spreads its jobs over;
	// default 1. A busy zone grows its lanes as workers find
	// it backlogged, up to MaxZoneLanes, and SetZoneLanes changes them
	// while workers run.
	ZoneLanes int
	// MaxZoneLanes caps the lanes a zone grows to on its own (when claims
	// or enqueues find it backlogged, or a claim splits a deep lane; a
	// short-job zone whose enqueues conflict grows to 16 at most,
	// lanes.ContendedMax); default 64.
	MaxZoneLanes int
	// LaneLeaseTime is how long a worker holds a lane of a zone it took from
	// the pointer index before others may take it; default
	// 5 s. A worker hands the lane back as soon as it has taken its vested
	// jobs, so the lease only bounds how long a vanished worker hides a
	// lane; in short-job mode it is also the jobs' lease.
	LaneLeaseTime time.Duration
	// AutomaticIdempotency makes the queue's own enqueue transactions set
	// FDB's automatic idempotency (transaction option automatic_idempotency,
	// "in development" in FDB 7.3): a commit whose reply was lost (1021) is
	// resolved by the client. The enqueue marker is still written: the
	// option leaves a timeout or cancellation that strikes the commit
	// unresolved, and without the marker a retry after one could enqueue a
	// job twice. EnqueueTx inside a caller's transaction is unaffected (the
	// caller owns its retries).
	AutomaticIdempotency bool
}

// TaskTypeOptions are the retry policy of one task type; a zero field
// falls back to the queue's Options.
type TaskTypeOptions struct {
	// MaxAttempts is the default for the type's jobs that set none (the
	// order: the job's own, then this, then Options.MaxAttempts).
	MaxAttempts int
	// Backoff computes the delay before retrying the type's failed jobs.
	Backoff func(attempt int) time.Duration
	// ShortJobs runs the type's jobs in short-job mode: a
	// worker leases the lane it works on instead of each job, and completes
	// jobs with a clear in batched acks. A job that outlives the lane lease
	// moves to a lease of its own first. Attempts are counted only when a
	// lane is taken over from a holder that vanished.
	ShortJobs bool
	// Untracked drops the lookup index of the type's jobs. By default every
	// job has one, S (2, "i", id), so that Get, Cancel, RunNow and Wait find
	// it by ID: one more key set at enqueue and at each move and cleared at
	// the end. An untracked job is found by ID only through its outcome
	// (Waitable) or the dead letters (ErrNotTrackable otherwise);
	// docs/design.md has both costs.
	Untracked bool
	// Retain keeps a finished record of each of the type's jobs that
	// completes or is cancelled, for this long after it finishes (at most
	// MaxRetain): its outcome, attempts, the errors of its last 5 failed
	// attempts, its times and its payload when it is at most 1 kB. Get
	// shows it (StateCompleted, StateCancelled) until the cleanup duty of
	// package worker (PurgeFinished) deletes it. Zero keeps nothing, and
	// such jobs pay nothing for the feature; NewJob.Retain overrides it per
	// job. docs/design.md, "Retention of finished jobs", has the cost.
	Retain time.Duration
	// NoTrace stores no span context with the type's jobs (NewJob.Trace):
	// their runs' spans link to nothing.
	NoTrace bool
}

// Retention bounds dead letters by age and count; zero means no bound.
type Retention struct {
	MaxAge   time.Duration
	MaxCount int
}

func (o Options) withDefaults() Options {
	o.Clock = clock.Or(o.Clock)
	if o.MaxLease <= 0 {
		o.MaxLease = 15 * time.Minute
	}
	if o.IdempotencyWindow <= 0 {
		o.IdempotencyWindow = time.Hour
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 25
	}
	if o.OutcomeRetention <= 0 {
		o.OutcomeRetention = 24 * time.Hour
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	o.TaskTypes = maps.Clone(o.TaskTypes) // the caller may reuse its map
	if o.DeadRetention == (Retention{}) {
		o.DeadRetention = Retention{MaxAge: 7 * 24 * time.Hour, MaxCount: 10_000}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ZoneLanes <= 0 {
		o.ZoneLanes = 1
	}
	if o.MaxZoneLanes <= 0 {
		o.MaxZoneLanes = 64
	}
	if o.LaneLeaseTime <= 0 {
		o.LaneLeaseTime = 5 * time.Second
	}
	return o
}

func (o Options) validate() error {
	for t, p := range o.TaskTypes {
		if err := validTaskType(t); err != nil {
			return fmt.Errorf("%w: TaskTypes: %w", ErrInvalidOption, err)
		}
		if p.MaxAttempts < 0 {
			return fmt.Errorf("%w: TaskTypes[%q].MaxAttempts %d is negative", ErrInvalidOption, t, p.MaxAttempts)
		}
		if p.Retain < 0 {
			return fmt.Errorf("%w: TaskTypes[%q].Retain %v is negative", ErrInvalidOption, t, p.Retain)
		}
		if err := checkRetain(p.Retain); err != nil {
			return fmt.Errorf("TaskTypes[%q]: %w", t, err)
		}
	}
	if o.ZoneLanes > maxZoneLanes || o.MaxZoneLanes > maxZoneLanes {
		return fmt.Errorf("%w: ZoneLanes %d and MaxZoneLanes %d must be at most %d", ErrInvalidOption, o.ZoneLanes, o.MaxZoneLanes, maxZoneLanes)
	}
	if o.LaneLeaseTime < time.Second || o.LaneLeaseTime > time.Minute {
		return fmt.Errorf("%w: LaneLeaseTime %v is outside [1s, 1m]", ErrInvalidOption, o.LaneLeaseTime)
	}
	if o.MaxLease < MinLease {
		return fmt.Errorf("%w: MaxLease %v is under the minimum lease %v", ErrInvalidOption, o.MaxLease, MinLease)
	}
	return nil
}
