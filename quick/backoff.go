package quick

import (
	"math/rand/v2"
	"time"
)

// Default retry backoff: the ceiling starts at MinDefaultBackoff and doubles
// per attempt up to MaxDefaultBackoff.
const (
	MinDefaultBackoff = time.Second
	MaxDefaultBackoff = 10 * time.Minute
)

// DefaultBackoff is the delay before the retry of a job that failed on
// attempt (1 for its first run). The ceiling is 1 s on attempt 1 and doubles
// per attempt (2 s, 4 s, ... 512 s on attempt 10) until it stops at 10
// minutes from attempt 11 on; the delay is drawn uniformly from [ceiling/2,
// ceiling] ("equal jitter"), so jobs failing together spread out and none
// returns at once.
//
// Why these numbers: a job failing through an outage is retried within one
// ceiling of its end, and since the ceilings double while each delay is at
// least half its ceiling, that ceiling is at most twice the outage so far
// plus a second (a 90 s outage: at most 128 s after; every delay before
// the end drawn near its floor gets there), and never more than 10 minutes
// whatever the outage (TestDefaultBackoffRetriesWithinTwiceTheOutage); the 25 attempts of
// the default MaxAttempts span 1.4 to 2.8 hours (ceilings 1+2+...+512 s,
// then 15 x 10 min) before a job is dead-lettered. The former default
// doubled from 2 s up to an hour.
func DefaultBackoff(attempt int) time.Duration {
	ceil := backoffCeiling(attempt)
	half := ceil / 2
	return half + time.Duration(rand.Int64N(int64(ceil-half)+1))
}

// backoffCeiling is DefaultBackoff's upper bound for attempt.
func backoffCeiling(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 20 { // well past the cap; keeps the shift small
		return MaxDefaultBackoff
	}
	return min(MinDefaultBackoff<<(attempt-1), MaxDefaultBackoff)
}
