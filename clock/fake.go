package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to. Its After channels, Timers
// and Tickers fire when Advance or Set moves the time past their deadline,
// in deadline order; a Ticker fires at most once per move, as a time.Ticker
// drops the ticks a slow receiver misses.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer // pending: one-shot (After, NewTimer) and tickers
	// changed is closed and replaced whenever a sleeper registers, so tests
	// can wait until a goroutine is asleep before advancing.
	changed chan struct{}
}

// fakeTimer is an After channel, a Timer or a Ticker (period > 0).
type fakeTimer struct {
	f      *Fake
	at     time.Time
	period time.Duration
	ch     chan time.Time
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After implements Clock.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	return f.NewTimer(d).C()
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return t
}

// NewTicker implements Clock. It panics if d <= 0, as time.NewTicker does.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, period: d, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return fakeTicker{t}
}

// fakeTicker is a Ticker: its Reset returns nothing.
type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time   { return k.t.ch }
func (k fakeTicker) Stop()                 { k.t.Stop() }
func (k fakeTicker) Reset(d time.Duration) { k.t.Reset(d) }

// startLocked arms t to fire d from now: at once if d <= 0 (a one-shot).
func (f *Fake) startLocked(t *fakeTimer, d time.Duration) {
	if d <= 0 && t.period == 0 {
		t.ch <- f.now
		return
	}
	t.at = f.now.Add(d)
	f.timers = append(f.timers, t)
	close(f.changed)
	f.changed = make(chan struct{})
}

// removeLocked disarms t; false if it was not armed.
func (f *Fake) removeLocked(t *fakeTimer) bool {
	for i, o := range f.timers {
		if o == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock forward by d and fires what it passes. A
// negative d is ignored: the clock never goes backwards.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		return
	}
	f.mu.Lock()
	f.setLocked(f.now.Add(d))
	f.mu.Unlock()
}

// Set moves the clock to t (never backwards) and fires what it passes.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.After(f.now) {
		f.setLocked(t)
	}
	f.mu.Unlock()
}

func (f *Fake) setLocked(now time.Time) {
	f.now = now
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	keep := f.timers[:0]
	for _, t := range f.timers {
		if t.at.After(now) {
			keep = append(keep, t)
			continue
		}
		select {
		case t.ch <- now:
		default: // a ticker's receiver is behind: drop the tick
		}
		if t.period > 0 {
			for !t.at.After(now) {
				t.at = t.at.Add(t.period)
			}
			keep = append(keep, t)
		}
	}
	clear(f.timers[len(keep):])
	f.timers = keep
}

// Sleepers returns how many After channels and Timers are still waiting.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sleepersLocked()
}

// Tickers returns how many Tickers are running.
func (f *Fake) Tickers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers) - f.sleepersLocked()
}

func (f *Fake) sleepersLocked() int {
	n := 0
	for _, t := range f.timers {
		if t.period == 0 {
			n++
		}
	}
	return n
}

// Changed returns a channel closed the next time a sleeper or ticker
// registers.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// C implements Timer.
func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop implements Timer; a value already sent is drained, so
// none is received after Stop (time.Timer's behaviour since Go 1.23).
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.stopLocked()
}

func (t *fakeTimer) stopLocked() bool {
	armed := t.f.removeLocked(t)
	select {
	case <-t.ch:
	default:
	}
	return armed
}

// Reset implements Timer: it rearms t d from now.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	armed := t.stopLocked()
	if t.period > 0 {
		if d <= 0 {
			panic("clock: non-positive interval for Ticker.Reset")
		}
		t.period = d
	}
	t.f.startLocked(t, d)
	return armed
}
