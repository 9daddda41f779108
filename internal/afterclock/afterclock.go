// Package afterclock builds the Timers and Tickers of a clock.Clock from
// its After alone, for the few clocks in this module (the demo's
// time-lapse, the soak test's pausable worker clock) whose time is not the
// time package's or a clock.Fake's.
package afterclock

import (
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// After is a clock's After.
type After func(d time.Duration) <-chan time.Time

// timer is a clock.Timer over an After: each arming waits in a goroutine
// and fires only if no Stop or Reset came since.
type timer struct {
	after After
	ch    chan time.Time
	mu    sync.Mutex
	gen   uint64
	armed bool
}

// NewTimer returns a Timer that fires once d has passed on after's clock.
func NewTimer(after After, d time.Duration) clock.Timer {
	t := &timer{after: after, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopLocked()
}

func (t *timer) stopLocked() bool {
	was := t.armed
	t.gen++
	t.armed = false
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *timer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.stopLocked()
	t.armed = true
	gen, wake := t.gen, t.after(d)
	go func() {
		v := <-wake
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.gen == gen && t.armed {
			t.armed = false
			t.ch <- v
		}
	}()
	return was
}

// ticker is a clock.Ticker over an After: a goroutine per period that
// drops the ticks a slow receiver misses.
type ticker struct {
	after After
	ch    chan time.Time
	mu    sync.Mutex
	stop  chan struct{}
}

// NewTicker returns a Ticker that fires every d (d > 0) of after's clock.
func NewTicker(after After, d time.Duration) clock.Ticker {
	t := &ticker{after: after, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (t *ticker) C() <-chan time.Time { return t.ch }

func (t *ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
}

func (t *ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("afterclock: non-positive interval for NewTicker")
	}
	t.Stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	stop := make(chan struct{})
	t.stop = stop
	go func() {
		for {
			select {
			case v := <-t.after(d):
				select {
				case <-stop:
					return
				default:
				}
				select {
				case t.ch <- v:
				default:
				}
			case <-stop:
				return
			}
		}
	}()
}
