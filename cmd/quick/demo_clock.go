package main

import (
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/afterclock"
)

// lapseClock is the demo's clock: real time, run faster (a time-lapse)
// while the demo only waits. The queue, the workers (leases, heartbeats,
// backoff) and the demo's handlers all read time from it, so every duration
// among them keeps its proportions; only the wall clock sees the lapse.
// Without it a demo with a killed worker spends most of its run idle,
// waiting for the dead worker's 10 s leases (quick.MinLease) to lapse.
type lapseClock struct {
	mu       sync.Mutex
	base     time.Time // the clock's reading at realBase
	realBase time.Time
	rate     float64
	changed  chan struct{} // closed when the rate changes
}

func newLapseClock() *lapseClock {
	now := time.Now()
	return &lapseClock{base: now, realBase: now, rate: 1, changed: make(chan struct{})}
}

func (c *lapseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *lapseClock) nowLocked() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.realBase)) * c.rate))
}

// Rate is how many seconds of this clock pass per real second.
func (c *lapseClock) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// SetRate changes the rate from now on; the reading stays continuous and
// sleepers recompute their real wait.
func (c *lapseClock) SetRate(r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r == c.rate {
		return
	}
	c.base, c.realBase, c.rate = c.nowLocked(), time.Now(), r
	close(c.changed)
	c.changed = make(chan struct{})
}

// After wakes when d has passed on this clock, whatever the rate does
// meanwhile.
func (c *lapseClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	target := c.nowLocked().Add(d)
	c.mu.Unlock()
	go func() {
		for {
			c.mu.Lock()
			now, rate, changed := c.nowLocked(), c.rate, c.changed
			c.mu.Unlock()
			if !now.Before(target) {
				ch <- now
				return
			}
			t := time.NewTimer(time.Duration(float64(target.Sub(now)) / rate))
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
			}
		}
	}()
	return ch
}

func (c *lapseClock) NewTimer(d time.Duration) clock.Timer { return afterclock.NewTimer(c.After, d) }

func (c *lapseClock) NewTicker(d time.Duration) clock.Ticker {
	return afterclock.NewTicker(c.After, d)
}
