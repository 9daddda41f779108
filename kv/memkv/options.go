package memkv

import (
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// The engine clock (Options.Clock) drives the MVCC window (reads and
// commits more than MVCCWindow after their read version fail with 1007),
// transaction timeouts and the pace of versions (about 1,000,000 a second,
// as FDB's). It must not go backwards: a clock.Fake never does. It may be
// the same clock the queue uses, so one Fake drives both.

// LatencyRange is a uniform distribution of delays between Min and Max. The
// zero value injects no delay.
type LatencyRange struct {
	Min, Max time.Duration
}

// Latency injects delays into the round trips an FDB client makes, so the
// queue's behaviour under realistic latency can be measured in process.
type Latency struct {
	// GRV delays obtaining a read version.
	GRV LatencyRange
	// Read delays each read (a Get, or one batch of a range read).
	Read LatencyRange
	// Commit delays a commit; half before the commit is applied, half after.
	Commit LatencyRange
}

// FDBLatency returns the latencies FDB's performance documentation gives for
// a cluster under 75% load: read version 0.3–1 ms, read 0.1–1 ms, commit
// 1.5–2.5 ms.
func FDBLatency() Latency {
	return Latency{
		GRV:    LatencyRange{Min: 300 * time.Microsecond, Max: time.Millisecond},
		Read:   LatencyRange{Min: 100 * time.Microsecond, Max: time.Millisecond},
		Commit: LatencyRange{Min: 1500 * time.Microsecond, Max: 2500 * time.Microsecond},
	}
}

// Backoff bounds OnError's wait before a retry. FDB starts at 10 ms and
// doubles to 1 s; the engine keeps the shape but smaller, so that tests with
// contention stay fast while retries still spread out.
type Backoff struct {
	// Initial is the first backoff ceiling (default 1 ms).
	Initial time.Duration
	// Max caps the ceiling as it doubles (default 50 ms).
	Max time.Duration
}

// Options configure an engine. The zero value is a usable default.
type Options struct {
	// Clock is the engine clock (default: the real clock, whose readings
	// carry Go's monotonic time, immune to wall-clock steps).
	Clock clock.Clock
	// MaxWatches caps the watches armed at once (default 10,000, FDB's
	// default); arming one more fails it with 1032 too_many_watches.
	MaxWatches int
	// Latency injects FDB-like delays (default none).
	Latency Latency
	// Wait is the time injected latency and OnError's backoff take
	// (default: real time). A clock.Fake makes them take no real time: a
	// read or commit in flight, or a backoff, ends when the test advances
	// the fake past it, so tests assert their durations exactly. It is
	// separate from Clock, which drives versions, the MVCC window and
	// transaction timeouts.
	Wait clock.Clock
	// Seed seeds latency and backoff jitter, so runs are reproducible.
	Seed int64
	// MVCCWindow is how long a read version stays usable, on the engine
	// clock (default 5 s, FDB's).
	MVCCWindow time.Duration
	// Backoff shapes OnError's retry delay.
	Backoff Backoff
}

const (
	defaultMaxWatches     = 10_000
	defaultMVCCWindow     = 5 * time.Second
	defaultBackoffInitial = time.Millisecond
	defaultBackoffMax     = 50 * time.Millisecond
)

func (o Options) withDefaults() Options {
	o.Clock = clock.Or(o.Clock)
	o.Wait = clock.Or(o.Wait)
	if o.MaxWatches <= 0 {
		o.MaxWatches = defaultMaxWatches
	}
	if o.MVCCWindow <= 0 {
		o.MVCCWindow = defaultMVCCWindow
	}
	if o.Backoff.Initial <= 0 {
		o.Backoff.Initial = defaultBackoffInitial
	}
	if o.Backoff.Max < o.Backoff.Initial {
		o.Backoff.Max = max(defaultBackoffMax, o.Backoff.Initial)
	}
	o.Latency.GRV = o.Latency.GRV.normalized()
	o.Latency.Read = o.Latency.Read.normalized()
	o.Latency.Commit = o.Latency.Commit.normalized()
	return o
}

func (r LatencyRange) normalized() LatencyRange {
	r.Min = max(r.Min, 0)
	r.Max = max(r.Max, 0)
	if r.Max < r.Min {
		r.Min, r.Max = r.Max, r.Min
	}
	return r
}

func (r LatencyRange) zero() bool { return r.Max == 0 }
