package worker

import (
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// idleMin is the first idle sleep after a claim that left free slots; each
// further empty claim doubles it, up to Config.MaxIdleSleep.
const idleMin = 100 * time.Millisecond

// backoff is the idle sleep after n empty claims: idleMin doubled n times,
// at most ceiling.
func backoff(n int, ceiling time.Duration) time.Duration {
	d := idleMin
	for i := 0; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// jitter shortens d by up to a fifth, so workers that went idle together
// do not poll together.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// idleSleep sleeps d with the waker armed, then registers the next sleep
// (of about next) before the claim that follows, so an enqueue racing that
// claim sees this worker asleep and wakes it. It reports false when the
// loop must exit. p is the calling loop's sleep, rechecked its flag for the
// extra claim, changed another wake-up (nil: none).
func (r *runner) idleSleep(p *park, rechecked *bool, changed <-chan struct{}, d, next time.Duration) bool {
	w := r.w
	if d <= 0 {
		return !w.stopping()
	}
	wake := !w.cfg.DisableWake
	if wake {
		end := w.clk.Now().Add(d)
		if !r.waker.covers(end) {
			// Register generously (a whole MaxIdleSleep), then claim once
			// more before sleeping: an enqueue that committed after the
			// empty claim but before this registration was seen by neither,
			// and would otherwise wait out the sleep. Enqueues that commit
			// later see the registration (their read of the sleep key is
			// serializable) and fire the watch.
			until := w.clk.Now().Add(max(d, w.cfg.MaxIdleSleep))
			if err := r.waker.register(w.bg, until); err != nil && !w.killed.Load() {
				w.log.Warn("worker: could not arm the wake-up watch; polling", "task_type", r.taskType, "err", err)
			} else if err == nil && !*rechecked {
				*rechecked = true
				return !w.stopping()
			}
		}
	}
	*rechecked = false
	var fired chan struct{}
	if wake {
		fired = r.waker.fired
	}
	timedOut := false
	if !r.sleepWith(p, d, fired, changed, &timedOut) {
		return false
	}
	if !wake {
		return true
	}
	// Register the next sleep, and re-arm the watch if it fired, before the
	// claim that follows: an enqueue the claim misses commits after the
	// watch's read version and finds the registration, so its wake-up fires
	// the new watch. The margin covers the claim's own duration. This only
	// spares the next sleep its extra claim: before that sleep, the check
	// above registers and claims once more whenever the registration does
	// not cover it.
	until := w.clk.Now().Add(next + time.Second)
	if !timedOut {
		w.stats.wakeups.Add(1)
		// Woken, maybe by an enqueue whose job waits for this claim: only
		// re-arm the watch (no round trip), and leave the sleep key to the
		// next sleep's check. Raising it here would put a commit (GRV +
		// commit, about 3 ms under FDB's latencies) between the wake-up and
		// the claim; the check before the next sleep raises it if needed,
		// after this job has started.
		until = time.Time{}
	}
	if !r.waker.covers(until) {
		if err := r.waker.register(w.bg, until); err != nil && !w.killed.Load() {
			w.log.Warn("worker: could not arm the wake-up watch; polling", "task_type", r.taskType, "err", err)
		}
	}
	return true
}

// sleepOn waits d on the worker clock (forever if d < 0) or until a or b
// fires, as the loop whose sleep is p; timedOut, if not nil, tells whether
// the time ran out. It reports false when the loop must exit (stop or kill).
func (r *runner) sleepOn(p *park, d time.Duration, a chan struct{}, b <-chan struct{}, timedOut *bool) bool {
	var t bool
	if timedOut == nil {
		timedOut = &t
	}
	return r.sleepWith(p, d, a, b, timedOut)
}

func (r *runner) sleepWith(p *park, d time.Duration, a chan struct{}, b <-chan struct{}, timedOut *bool) bool {
	w := r.w
	var timer <-chan time.Time
	if d >= 0 {
		timer = w.clk.After(d)
		p.at(w.clk.Now().Add(d))
	} else {
		p.forever()
	}
	defer p.run()
	select {
	case <-timer:
		*timedOut = true
	case <-a:
	case <-b:
	case <-w.stopCh:
		return false
	case <-w.bg.Done():
		return false
	}
	return true
}

// Reasons claims are refused.
const (
	refuseSkew = "standing by: clock too far from the other workers' (over an eighth of the lease, error included)"
	// Paused by quick.Queue.Pause (pause.go), or not known yet.
	refusePaused       = "task type paused"
	refusePauseUnknown = "paused task types not read yet"
)

// releaseClaimed hands back jobs claimed while the worker began to stop.
func (r *runner) releaseClaimed(ls []quick.Lease) {
	for _, l := range ls {
		st := r.newState(l)
		r.w.count(r, kindClaimed, 1)
		st.abandon()
	}
}
