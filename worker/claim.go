package worker

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// The claim loops (docs/design.md, "The worker").
//
// A runner finds work through the task type's pointer index
// (quick.Consumer.Claim): no membership read, no assignment. claimers
// claim goroutines run side by side, each on at most one lane at a time, so
// several claims are in flight at once and a worker never waits on one
// commit. Goroutine 0 is the runner's scanner, the only one that reads the
// index (scanner.go): its claims also return other vested lanes, one per
// zone, which it hands to the other goroutines (executors) waiting for
// work; they claim those lanes (ClaimOptions.From) and continue on them.
// Each claim reserves the free handler slots it asks for (runner.reserve),
// so the goroutines together never start more handlers than Concurrency. A
// claim keeps its lane (ClaimOptions.Keep) while it has vested jobs, for up
// to keepRounds claims in a row, then lets it go so other lanes get their
// turn.
//
// The scanner, when it finds nothing vested, sleeps (until NextVest, an
// enqueue's wake-up, an executor asking for work, or the idle backoff); the
// executors wait for it, so an idle worker polls once per idle sleep
// whatever claimers is.
//
// Short-job mode (quick.TaskTypeOptions.ShortJobs) hands jobs out under the
// claim's lane lease; short.go keeps those lanes.
//
// Keys: those of quick.Consumer's Claim and ReleaseLane (quick/claim.go,
// quick/scan.go, quick/pointer.go), and the task type's sleep and wake keys
// when idle (waker.go); nothing of its own.

// claimers is how many claims a zones runner keeps in flight at most.
const claimers = 4

// keepRounds is how many claims in a row one goroutine makes on one lane
// before letting it go.
const keepRounds = 8

// claimersFor is the claim goroutines of a runner with c slots.
func claimersFor(c int) int { return max(1, min(claimers, c)) }

// reserve takes up to want free handler slots for a claim in flight; the
// claim gives back what it did not use with unreserve once it has started
// its jobs.
func (r *runner) reserve(want int) int {
	r.mu.Lock()
	n := min(want, r.capacity()-len(r.running)-r.reserved)
	if n > 0 {
		r.reserved += n
	}
	r.mu.Unlock()
	if n <= 0 {
		// Saturated: its share of a Group's slots grows (slotshare.go),
		// unless its claims are failing (its slots are held by claims
		// that will time out, not by work).
		if r.failing.Load() == 0 {
			r.setPressed(true)
		}
		return 0
	}
	return n
}

func (r *runner) unreserve(n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	r.reserved -= n
	r.signalSlotsLocked()
	r.mu.Unlock()
}

// slotsChanged is closed when a slot frees or a reservation is given back.
// Take it before trying to reserve, so a slot freed in between is not
// missed.
func (r *runner) slotsChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slotCh == nil {
		r.slotCh = make(chan struct{})
	}
	return r.slotCh
}

func (r *runner) signalSlotsLocked() {
	if r.slotCh != nil {
		close(r.slotCh)
		r.slotCh = nil
	}
}

// beatChanged is closed when the clock check or the pause read changed
// (signalBeat).
func (r *runner) beatChanged() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.beatCh == nil {
		r.beatCh = make(chan struct{})
	}
	return r.beatCh
}

// signalBeat wakes every claim loop refusing to claim: they look again.
func (r *runner) signalBeat() {
	r.mu.Lock()
	if r.beatCh != nil {
		close(r.beatCh)
		r.beatCh = nil
	}
	r.mu.Unlock()
}

// moreWork is closed when a claim found a fresh lane with work (the index
// has vested lanes again, maybe more than one) or this worker handed a lane
// back: parked helpers wake on it.
func (r *runner) moreWork() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moreCh == nil {
		r.moreCh = make(chan struct{})
	}
	return r.moreCh
}

func (r *runner) signalMore() {
	r.mu.Lock()
	if r.moreCh != nil {
		close(r.moreCh)
		r.moreCh = nil
	}
	r.mu.Unlock()
}

// refuse says why a claim must not run now, or "".
func (r *runner) refuse() string {
	if paused, known := r.w.pause.isPaused(r.taskType); paused && !mutant.On("worker.zones-pause") {
		return refusePaused
	} else if !known {
		return refusePauseUnknown
	}
	return r.w.clockRefusal(r)
}

// noteRefusal counts and logs a refused claim round (on changes).
func (r *runner) noteRefusal(reason string) {
	w := r.w
	if reason != r.refusal {
		// Waiting for the first clock round at start is normal, not a
		// warning; a clock found off the others' is.
		if reason == refusePaused || reason == refusePauseUnknown || reason == refuseClockUnknown {
			w.log.Debug("worker: not claiming", "task_type", r.taskType, "reason", reason)
		} else {
			w.log.Warn("worker: refusing to claim", "task_type", r.taskType, "reason", reason)
		}
	}
	r.refusal = reason
	w.stats.refused.Add(1)
	w.met.refused(r, reason)
}

func (r *runner) noteClaiming() {
	if r.refusal != "" {
		r.w.log.Debug("worker: claiming again", "task_type", r.taskType, "was", r.refusal)
		r.refusal = ""
	}
}

// claimer is one claim goroutine's state.
type claimer struct {
	r    *runner
	i    int
	park *park
	// ptr is a lane kept with per-job leases (Keep), or nil.
	ptr *quick.LaneLease
	// sl is a lane held in short-job mode this goroutine continues on.
	sl *shortLane
	// cand is a vested lane the scanner handed this executor (scanner.go).
	cand      *quick.LaneCandidate
	rounds    int // claims in a row on ptr or sl
	empties   int // idle claims in a row (leader)
	errs      int // failed claims in a row
	rechecked bool
}

// claimLoop is claim goroutine i of a runner.
func (r *runner) claimLoop(i int) {
	defer r.zloops.Done()
	c := &claimer{r: r, i: i, park: &r.zparks[i]}
	defer c.park.forever()
	defer func() {
		if c.errs > 0 {
			r.failing.Add(-1)
		}
	}()
	if i == 0 {
		defer r.feed.drain(r)
		defer r.listenLocal()()
	}
	defer c.letGo()
	w := r.w
	k := claimersFor(r.opts.Concurrency)
	for !w.stopping() {
		per := max(1, (r.capacity()+k-1)/k)
		// Take the wake-ups before reading the standing they announce: a
		// change that lands between the two then still wakes this loop.
		beat := r.beatChanged()
		var clockChanged <-chan struct{}
		if w.zclock != nil {
			clockChanged = w.zclock.changed()
		}
		if reason := r.refuse(); reason != "" {
			c.letGo()
			if i == 0 {
				r.noteRefusal(reason)
				r.setPressed(false)
			}
			if !r.sleepOn(c.park, w.cfg.HeartbeatPeriod, beat, clockChanged, nil) {
				return
			}
			continue
		}
		if i == 0 {
			r.noteClaiming()
		} else if c.ptr == nil && c.sl == nil && c.cand == nil && !mutant.On("worker.no-scanner") {
			// An executor with no lane waits for the scanner (scanner.go).
			if !c.await() {
				return
			}
			continue
		}
		changed := r.slotsChanged()
		// A claim continuing on a lane with more vested jobs may take up to
		// Concurrency (one lane is worked by one claim at a time); a claim
		// looking for a lane takes its share of the capacity, leaving slots
		// to the others.
		want := per
		if c.ptr != nil || c.sl != nil {
			want = r.conc()
		}
		n := r.reserve(want)
		if n == 0 {
			if !c.waitSlots(changed) {
				return
			}
			continue
		}
		if !c.claim(n) {
			return
		}
	}
}

// waitSlots waits for a free slot. A lane kept with per-job leases is let go
// if the wait outlasts a fifth of the pointer lease: others may work it.
func (c *claimer) waitSlots(changed <-chan struct{}) bool {
	r := c.r
	d := time.Duration(-1)
	if c.ptr != nil {
		d = max(c.ptr.Deadline.Sub(r.w.clk.Now())-r.w.q.Options().LaneLeaseTime*4/5, 0)
	}
	var timedOut bool
	if !r.sleepWith(c.park, d, nil, changed, &timedOut) {
		return false
	}
	if timedOut {
		c.letGo()
	}
	return true
}

// claim makes one claim of up to n jobs (n slots reserved) and starts them.
// It reports false when the loop must exit.
func (c *claimer) claim(n int) bool {
	r, w := c.r, c.r.w
	opts := quick.ClaimOptions{
		TaskType: r.taskType, Holder: w.cfg.ID, Max: n,
		Lease: r.opts.Lease, BatchPriority: r.opts.BatchPriority, Tag: r.opts.Tag,
		Keep: true,
	}
	sl := c.sl
	if sl != nil {
		// The lane's mutex serialises this claim with its renewal and
		// hand-back (short.go): each returns the lane lease the next one
		// continues from.
		sl.mu.Lock()
		if sl.retired {
			sl.mu.Unlock()
			c.sl, sl, c.rounds = nil, nil, 0
		} else {
			p := sl.p
			opts.Lane = &p
		}
	} else if c.ptr != nil {
		if c.rounds >= keepRounds-1 && !mutant.On("worker.keep-rounds") {
			opts.Keep = false // its last round: the claim hands it back
		}
		opts.Lane = c.ptr
	}
	if opts.Lane == nil {
		if c.cand != nil {
			opts.From, c.cand = c.cand, nil // a lane the scanner saw
			defer r.feed.settle(opts.From)
		} else if c.i == 0 {
			opts.Scan = r.scanWidth() // one more lane per waiting executor
			opts.Skip = r.feed.skip()
		}
	}
	continuing := opts.Lane != nil
	// The acks of this task type's finished jobs that can go into the
	// claim's commit do (acker.take): a drain then pays one commit for a
	// round of acks and the next claim. Not under a claim timeout
	// (Config.ClaimTimeout, a Group's): a claim cut off there may have
	// committed, and its acks handed back to the acker would then be
	// answered as lost leases.
	var carried []ackReq
	if w.cfg.ClaimTimeout <= 0 {
		carried = w.acker.take(r)
	}
	if len(carried) > 0 {
		opts.Acks = make([]quick.Ack, len(carried))
		for i, req := range carried {
			opts.Acks[i] = req.ack
		}
	}
	ctx, cancel := w.claimContext()
	res, err := w.q.Consumer().Claim(ctx, opts)
	cancel()
	w.acker.settleTaken(carried, res.Acked, err)
	if err != nil {
		if sl != nil {
			sl.mu.Unlock()
		}
		r.unreserve(n)
		if w.killed.Load() {
			return false
		}
		countConflict(r, err)
		if continuing && quick.IsLaneLost(err) {
			// The lane is gone (taken over after a late renewal): its
			// short jobs run again elsewhere; look for another lane.
			if sl != nil {
				sl.mu.Lock()
				r.shorts.lost(sl, err)
				sl.mu.Unlock()
			}
			c.ptr, c.sl, c.rounds = nil, nil, 0
			return true
		}
		if c.errs == 0 {
			r.failing.Add(1)
		}
		c.errs++
		r.setPressed(false) // its cluster is down or slow: others take its slots
		w.log.Warn("worker: claim failed", "task_type", r.taskType, "err", err, "in_a_row", c.errs)
		return r.sleepOn(c.park, jitter(backoff(c.errs, w.cfg.MaxIdleSleep)), nil, nil, nil)
	}
	if c.errs > 0 {
		r.failing.Add(-1)
	}
	c.errs = 0
	if res.Missed {
		// Another process leased the lane since the scan: wait for the
		// next one.
		w.stats.emptyClaims.Add(1)
		r.unreserve(n)
		return true
	}
	short := res.Lane != nil && res.Lane.Short && !res.Lane.Lapsed
	if short {
		if sl == nil {
			sl = r.shorts.add(*res.Lane)
			sl.mu.Lock()
			c.sl, c.rounds = sl, 0
		} else {
			sl.p = *res.Lane
		}
	} else if sl != nil {
		// A lane this goroutine held short came back without one: the
		// claim handed it back (nothing more to take).
		sl.retired = true
	}
	if len(res.Jobs) > 0 {
		w.stats.claimBatches.Add(1)
	} else {
		w.stats.emptyClaims.Add(1)
	}
	if w.stopping() {
		if sl != nil {
			sl.mu.Unlock()
		}
		// Stopped while the claim was in flight: hand the jobs back
		// rather than start them.
		for _, l := range res.Jobs {
			if l.Short() {
				r.startHeld(l, sl, true)
			} else {
				r.startHeld(l, nil, true)
			}
		}
		r.unreserve(n)
		if !short {
			c.ptr = res.Lane
		}
		return false
	}
	for _, l := range res.Jobs {
		if l.Short() {
			r.startHeld(l, sl, false)
		} else {
			r.startHeld(l, nil, false)
		}
	}
	if sl != nil {
		sl.mu.Unlock()
	}
	r.unreserve(n)
	if !short {
		c.ptr = res.Lane
		if sl != nil {
			r.shorts.kick()
			c.sl = nil
		}
	}
	switch {
	case len(res.Jobs) > 0 && continuing:
		c.rounds++
		if short && c.rounds >= keepRounds && !mutant.On("worker.keep-rounds") {
			r.shorts.retire(sl)
			c.sl, c.rounds = nil, 0
		}
	case len(res.Jobs) > 0:
		c.rounds = 0
	case continuing || res.Lane != nil:
		// The lane has nothing (more) vested: let it go and look for
		// another at once. (A fresh lane with nothing vested: its pointer
		// vested early, for a key moved later since; a short-job claim
		// keeps such a lane too.)
		c.letGo()
		if c.i == 0 {
			c.distribute(res)
		}
		return true
	}
	if c.i == 0 {
		c.distribute(res)
	}
	if len(res.Jobs) > 0 {
		// Wake the parked helpers when a claim finds a fresh lane with
		// work: the index has vested lanes again, maybe more than one. A
		// claim continuing on its lane does not: the helpers looked for
		// other lanes when it took this one.
		if !continuing {
			r.signalMore()
		}
		c.empties = 0
		return true
	}
	return c.idle(res.NextVest)
}

// letGo gives up the lane this goroutine works on: a per-job lane goes
// back to the index now; a short lane is retired, and handed back once its
// jobs are done (short.go).
func (c *claimer) letGo() {
	r := c.r
	if c.ptr != nil {
		p := *c.ptr
		c.ptr = nil
		if !r.w.killed.Load() {
			ctx, cancel := context.WithTimeout(r.w.bg, extendTimeout)
			if err := r.w.q.Consumer().ReleaseLane(ctx, p); err != nil && !quick.IsLaneLost(err) && r.w.bg.Err() == nil {
				r.w.log.Warn("worker: could not hand a lane back; it returns when its lease lapses", "task_type", r.taskType, "err", err)
			}
			cancel()
		}
	}
	if c.sl != nil {
		r.shorts.retire(c.sl)
		c.sl = nil
	}
	if c.cand != nil {
		r.feed.settle(c.cand)
		c.cand = nil
	}
	c.rounds = 0
}

// idle handles a claim that found no vested lane. The scanner sleeps; an
// executor goes back to waiting for the scanner (scanner.go).
func (c *claimer) idle(nextVest time.Time) bool {
	r, w := c.r, c.r.w
	if c.i != 0 {
		if mutant.On("worker.no-scanner") {
			// Every claim goroutine reads the index, as before the scanner.
			return r.sleepOn(c.park, -1, nil, r.moreWork(), nil)
		}
		return !w.stopping()
	}
	r.setPressed(false) // nothing vested: others take its slots
	d := jitter(backoff(c.empties, w.cfg.MaxIdleSleep))
	c.empties++
	if !nextVest.IsZero() {
		d = min(d, max(nextVest.Sub(w.clk.Now()), 0))
	}
	// This worker's own hand-backs (a short lane released once its jobs
	// are acked) wake the leader too: nothing else would, short of the
	// idle backoff.
	return r.idleSleep(c.park, &c.rechecked, r.moreWork(), d, backoff(c.empties, w.cfg.MaxIdleSleep))
}

// startHeld starts a claimed job; sl is the short lane it was handed out
// under (nil for a per-job lease). With release set the worker is stopping:
// the job is handed back instead.
func (r *runner) startHeld(l quick.Lease, sl *shortLane, release bool) {
	if release {
		st := r.newState(l)
		st.lane = sl
		if sl != nil {
			sl.addJob(st)
		}
		r.w.count(r, kindClaimed, 1)
		st.abandon()
		return
	}
	r.startWith(l, sl)
}
