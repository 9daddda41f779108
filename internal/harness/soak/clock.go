package soak

import (
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/afterclock"
)

// workerClock is one worker's time: real time shifted by a fixed offset (a
// badly set clock), and pausable. The worker runtime sleeps only through
// Clock.After (and its timers and tickers, built on After), so holding every After while paused freezes the worker as a
// stopped process or a long GC pause would: its lease keeper stops renewing
// and its handlers stop, while real time, and so the lease deadlines the
// other workers see, moves on. Now keeps running during a pause, as a wall
// clock does.
type workerClock struct {
	offset time.Duration
	// onPause, when set, learns of each freeze (real time).
	onPause func(from, to time.Time)

	mu     sync.Mutex
	resume chan struct{} // non-nil while paused; closed when it ends
}

var _ clock.Clock = (*workerClock)(nil)

func (c *workerClock) Now() time.Time { return time.Now().Add(c.offset) }

// After fires once d has passed and the clock is not paused.
func (c *workerClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		if d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		c.waitResumed()
		ch <- c.Now()
	}()
	return ch
}

func (c *workerClock) NewTimer(d time.Duration) clock.Timer {
	return afterclock.NewTimer(c.After, d)
}

func (c *workerClock) NewTicker(d time.Duration) clock.Ticker {
	return afterclock.NewTicker(c.After, d)
}

func (c *workerClock) waitResumed() {
	c.mu.Lock()
	r := c.resume
	c.mu.Unlock()
	if r != nil {
		<-r
	}
}

// Pause freezes the worker for d; false if it was already paused.
func (c *workerClock) Pause(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume != nil {
		return false
	}
	r := make(chan struct{})
	c.resume = r
	if c.onPause != nil {
		now := time.Now()
		c.onPause(now, now.Add(d))
	}
	time.AfterFunc(d, func() {
		c.mu.Lock()
		c.resume = nil
		c.mu.Unlock()
		close(r)
	})
	return true
}
