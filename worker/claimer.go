package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// idleMin is the first idle sleep after a claim that left free slots; each
// further empty claim doubles it, up to Config.MaxIdleSleep.
const idleMin = 100 * time.Millisecond

// claimLoop claims jobs of the runner's task type while it has free slots,
// from the lanes its tracker assigns, and sleeps when there is nothing to
// claim: until the next vesting time it saw, an enqueue's wake-up, a change
// of lanes, or at most MaxIdleSleep.
func (r *runner) claimLoop() {
	defer close(r.claimerDone)
	defer r.claimLoopState.forever()
	w := r.w
	log := w.log.With("task_type", r.taskType)
	var (
		empties int // claims in a row that took nothing
		errs    int // claims in a row that failed
	)
	for !w.stopping() {
		if r.zones {
			// The zones layout: this loop drains schema-1 jobs only, while
			// any are left (s1_legacy.go).
			changed := r.legacy.changed()
			if on, _ := r.legacy.get(); !on {
				if !r.sleep(-1, nil, changed) {
					return
				}
				continue
			}
		}
		// Taken before the look at the slots, so that one freed in between
		// is not missed.
		slots := r.slotsChanged()
		free := r.free()
		if free <= 0 {
			// Full: the next claim waits for a slot. In the zones layout
			// the slots may be held by the zones claims' reservations, and
			// a reservation given back wakes only slotsChanged: waiting on
			// a handler's return alone (slotFreed) stranded the schema-1
			// jobs of this worker's lanes once the zones ran dry.
			if !r.sleep(-1, r.slotFreed, slots) {
				return
			}
			continue
		}
		if reason := r.refuse(); reason != "" {
			if reason != r.refusal {
				if reason == refuseNotJoined || reason == refusePaused || reason == refusePauseUnknown {
					log.Debug("worker: not claiming until the first heartbeat", "reason", reason)
				} else {
					log.Warn("worker: refusing to claim", "reason", reason)
				}
			}
			r.refusal = reason
			w.stats.refused.Add(1)
			w.met.refused(r, reason)
			if !r.sleep(w.cfg.HeartbeatPeriod, r.beat, nil) {
				return
			}
			continue
		}
		if r.refusal != "" {
			// Waiting for the first heartbeat is routine (every start does
			// it): only a recovery from a real refusal is worth INFO.
			lvl := slog.LevelInfo
			if r.refusal == refuseNotJoined || r.refusal == refusePauseUnknown {
				lvl = slog.LevelDebug
			}
			log.Log(context.Background(), lvl, "worker: claiming again", "was", r.refusal)
			r.refusal = ""
		}
		lanes := r.tracker.Lanes()
		if len(lanes) == 0 {
			// Other workers watch every lane; wait for a change.
			if !r.sleep(-1, r.beat, r.tracker.Changed()) {
				return
			}
			continue
		}
		// Reserved, since zones claims share the slots (zones.go).
		free = r.reserve(free)
		if free <= 0 {
			continue
		}
		res, err := w.q.Claim(w.bg, quick.ClaimOptions{
			TaskType: r.taskType, Holder: w.cfg.ID, Lanes: lanes, Max: free,
			Lease: r.opts.Lease, BatchPriority: r.opts.BatchPriority, Tag: r.opts.Tag,
		})
		if err != nil {
			r.unreserve(free)
			if w.killed.Load() {
				return
			}
			errs++
			countConflict(r, err)
			log.Warn("worker: claim failed", "err", err, "in_a_row", errs)
			if !r.sleep(jitter(backoff(errs, w.cfg.MaxIdleSleep)), nil, nil) {
				return
			}
			continue
		}
		errs = 0
		if len(res.Jobs) > 0 {
			w.stats.claimBatches.Add(1)
		} else {
			w.stats.emptyClaims.Add(1)
		}
		if w.stopping() {
			// Stopped while the claim was in flight: hand the jobs back
			// rather than start them.
			r.releaseClaimed(res.Jobs)
			r.unreserve(free)
			return
		}
		for _, l := range res.Jobs {
			r.start(l)
		}
		r.unreserve(free)
		if len(res.Jobs) > 0 {
			// Jobs are coming in: claim again as soon as a slot is free.
			// Only an empty claim puts the loop to sleep, so a busy worker
			// never waits out a sleep (nor pays for a wake-up) between
			// batches.
			empties = 0
			continue
		}
		// The lanes hold nothing that has vested: sleep.
		d := jitter(backoff(empties, w.cfg.MaxIdleSleep))
		empties++
		if !res.NextVest.IsZero() {
			d = min(d, max(res.NextVest.Sub(w.clk.Now()), 0))
		}
		if !r.idleSleep(&r.claimLoopState, &r.rechecked, r.tracker.Changed(), d, backoff(empties, w.cfg.MaxIdleSleep)) {
			return
		}
	}
}

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

// sleep waits d on the worker clock (forever if d < 0) or until a or b
// fires. It reports false when the loop must exit (stop or kill).
func (r *runner) sleep(d time.Duration, a chan struct{}, b <-chan struct{}) bool {
	return r.sleepOn(&r.claimLoopState, d, a, b, nil)
}

// sleepOn is sleep for the loop whose sleep is p; timedOut, if not nil,
// tells whether the time ran out.
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
	refuseNotJoined = "not registered in the lanes registry yet"
	refuseStale     = "heartbeat older than the registry timeout: the others may already watch this worker's lanes"
	refuseSkew      = "standing by: clock too far from the other workers' (over an eighth of the lease, error included); the others watch this worker's lanes"
	// Paused by quick.Queue.Pause (pause.go), or not known yet.
	refusePaused       = "task type paused"
	refusePauseUnknown = "paused task types not read yet"
)

// refuse says why the runner must not claim now, or "". Leases are
// wall-clock deadlines: a worker whose clock is far off the others', or
// whose heartbeat is so old that others count it dead and watch its lanes,
// would claim on a picture of the world that no longer holds.
func (r *runner) refuse() string {
	w := r.w
	last := r.tracker.LastBeat()
	if last.IsZero() {
		return refuseNotJoined
	}
	if paused, known := w.pause.isPaused(r.taskType); paused {
		return refusePaused
	} else if !known {
		return refusePauseUnknown
	}
	if w.clk.Now().Sub(last) > w.reg.Options().Timeout {
		return refuseStale
	}
	if r.tracker.Standby() && !mutant.On("worker.skew-standby") {
		// The lanes registry judged this worker's clock too far from the
		// task type's reference (lanes/skew.go) and stood it by: it takes
		// no lanes, so the others watch its share meanwhile.
		return refuseSkew
	}
	return ""
}

// releaseClaimed hands back jobs claimed while the worker began to stop.
func (r *runner) releaseClaimed(ls []quick.Lease) {
	for _, l := range ls {
		st := r.newState(l)
		r.w.count(r, kindClaimed, 1)
		st.abandon()
	}
}
