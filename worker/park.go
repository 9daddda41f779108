package worker

import (
	"math"
	"sync/atomic"
	"time"
)

// park records where a background loop sleeps: until a time on the worker
// clock, or until something other than the clock wakes it. The worker's
// behaviour never depends on it; it lets a test on a clock.Fake tell that
// every loop is asleep, waiting on times still ahead, before it advances the
// clock (see Worker.quiet), instead of sleeping and hoping.
type park struct{ until atomic.Int64 }

const noTimer = math.MaxInt64

func (p *park) at(t time.Time) { p.until.Store(max(t.UnixNano(), 1)) }
func (p *park) forever()       { p.until.Store(noTimer) }
func (p *park) run()           { p.until.Store(0) }

// asleep reports whether the loop waits on a time after now, or on no time.
func (p *park) asleep(now time.Time) bool {
	u := p.until.Load()
	return u != 0 && u > now.UnixNano()
}

// quiet reports whether every background loop of the worker is asleep
// waiting on a time after now (or on no time), no ack is pending and the
// paused task types have been read: the state in which only a clock
// advance or an outside event moves it.
func (w *Worker) quiet() bool {
	now := w.clk.Now()
	if !w.keeper.loopState.asleep(now) || w.keeper.pending() || w.keeper.waitingOnLock() || !w.acker.loopState.asleep(now) || w.acker.pending() || !w.dutyState.asleep(now) {
		return false
	}
	// The paused task types are read once, asynchronously (pause.go),
	// before any claim: until then the worker is still starting, whatever
	// the clock says.
	if _, known := w.pause.isPaused(""); !known {
		return false
	}
	// A loop's park reads "running" until its first round is done, so an
	// asleep loop has looked at least once (or failed to, and waits to
	// retry).
	if !w.zclock.loopState.asleep(now) {
		return false
	}
	for _, r := range w.snapshotRunners() {
		if !r.shorts.loopState.asleep(now) || r.shorts.pending() {
			return false
		}
		if len(r.feed.ch) > 0 {
			return false // a lane handed to an executor not yet taken up
		}
		for i := range r.zparks {
			if !r.zparks[i].asleep(now) {
				return false
			}
		}
	}
	return true
}
