// Package clock is the one injectable time source of quickfdb. The queue,
// the worker runtime, the lanes registry, cron and the in-memory engine
// read time and sleep only through a Clock, so a test drives all of them
// with one Fake instead of sleeping.
package clock

import "time"

// Clock tells the time and wakes sleepers: the time package's Now, After,
// NewTimer and NewTicker, on this clock's time.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed on
	// this clock.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a Timer that fires once d has passed.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a Ticker that fires every d (d > 0), dropping the
	// ticks a slow receiver misses, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
}

// Timer is a time.Timer of a Clock. As with time.Timer since Go 1.23, no
// stale value is received after Stop or Reset returns.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; false if it had fired or been
	// stopped.
	Stop() bool
	// Reset makes the timer fire d from now; false if it had fired or been
	// stopped.
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker of a Clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	// Reset stops the ticker and restarts it with period d (d > 0).
	Reset(d time.Duration)
}

// Real is the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker       { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// Or returns c, or the real clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
