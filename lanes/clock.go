package lanes

import (
	"sync"
	"time"
)

// Clock is the time source of a Registry. Liveness timeouts are measured on
// it and the heartbeat reports its wall clock. Tests inject a ManualClock.
type Clock interface {
	Now() time.Time
}

// TickerClock is a Clock that also drives Tracker.Run's heartbeat loop.
// When Options.Clock does not implement it, Run uses a real time.Ticker.
type TickerClock interface {
	Clock
	// NewTicker returns a channel that receives a value every d of this
	// clock's time, dropping ticks the receiver is not ready for, and a
	// function that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// ManualClock is a Clock that only moves when told to, so tests of liveness
// and rebalancing need no sleeping. It is safe for concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*manualTicker
}

type manualTicker struct {
	period  time.Duration
	next    time.Time
	c       chan time.Time
	stopped bool
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now implements Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and fires the tickers that are due,
// at most one tick each (like time.Ticker, which drops ticks a slow receiver
// misses).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	live := c.tickers[:0]
	for _, t := range c.tickers {
		if t.stopped {
			continue
		}
		live = append(live, t)
		if c.now.Before(t.next) {
			continue
		}
		for !c.now.Before(t.next) {
			t.next = t.next.Add(t.period)
		}
		select {
		case t.c <- c.now:
		default:
		}
	}
	c.tickers = live
}

// NewTicker implements TickerClock.
func (c *ManualClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		panic("lanes.ManualClock.NewTicker: non-positive period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{period: d, next: c.now.Add(d), c: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t.c, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.stopped = true
	}
}

// Tickers reports how many tickers are running, so a test can wait until a
// Run loop is ready before advancing the clock.
func (c *ManualClock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.tickers {
		if !t.stopped {
			n++
		}
	}
	return n
}
