// Package clock is the injectable time source of quickfdb. The queue, the
// worker runtime and cron read time only through a Clock, so tests drive
// leases, backoff and schedules with a Fake clock instead of sleeping.
package clock

import "time"

// Clock tells the time and wakes sleepers.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed on
	// this clock.
	After(d time.Duration) <-chan time.Time
}

// Real is the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Or returns c, or the real clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
