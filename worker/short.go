package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Short-job mode (quick.TaskTypeOptions.ShortJobs). A claim hands jobs out
// under its lane lease without moving their keys: the lane lease is their
// lease. The worker keeps such a lane (a shortLane) while its jobs run:
//
//   - it renews the lane (quick.Consumer.ExtendLane) when a third of the
//     pointer lease is left, as the keeper renews per-job leases;
//   - acks of its jobs go through the acker in batches, checked against the
//     lane lease (the acks clear the keys);
//   - once the lane is retired (nothing more vested, or keepRounds claims
//     on it) and every job handed out under it is acked, it goes back to
//     the index (ReleaseLane);
//   - when a renewal falls due and the lane is retired, or one of its jobs
//     has run for half a pointer lease, or the lane has been held for
//     maxShortHold, the jobs still running move to leases of their own in
//     the transaction that hands the lane back (quick.Queue.HandBack), while
//     the lane lease still holds: no gap. The keeper renews them from then
//     on.
//
// A job whose ack is still in flight blocks the hand-back (its key is still
// in the lane, vested: handed back, the lane would run it again); the
// shortKeeper extends the lane and tries again once the acks are in.
//
// Keys: those of ExtendLane, HandBack and ReleaseLane (quick/short.go,
// quick/pointer.go); nothing of its own.

// maxShortHold bounds how long a worker keeps one short lane, in pointer
// leases, so a lane busy for ever still changes hands now and then.
const maxShortHold = 12

// shortLane is a lane held in short-job mode.
type shortLane struct {
	// mu serialises the operations that move the lane lease (a claim
	// continuing on it, renewal, hand-back): each returns the lease the next
	// continues from.
	mu      sync.Mutex
	p       quick.LaneLease
	since   time.Time
	retired bool // no more claims on it; hand it back once its jobs are done
	gone    bool // handed back or lost

	jmu  sync.Mutex
	jobs map[*jobState]struct{} // handed out under it, not yet acked or moved
}

func (sl *shortLane) addJob(st *jobState) {
	sl.jmu.Lock()
	sl.jobs[st] = struct{}{}
	sl.jmu.Unlock()
}

func (sl *shortLane) removeJob(st *jobState) {
	sl.jmu.Lock()
	delete(sl.jobs, st)
	sl.jmu.Unlock()
}

func (sl *shortLane) snapshotJobs() []*jobState {
	sl.jmu.Lock()
	defer sl.jmu.Unlock()
	out := make([]*jobState, 0, len(sl.jobs))
	for st := range sl.jobs {
		out = append(out, st)
	}
	return out
}

// shortLanes are a runner's short lanes and the loop that keeps them.
type shortLanes struct {
	r      *runner
	kickCh chan struct{}
	// stopCh ends the loop at shutdown, after the handlers have had their
	// time and the acks are flushed: the lanes must be renewed until then.
	stopCh   chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu    sync.Mutex
	lanes []*shortLane

	loopState   park
	kicks, seen atomic.Int64
}

func newShortLanes(r *runner) *shortLanes {
	return &shortLanes{r: r, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
}

// stop ends the loop and waits for it.
func (s *shortLanes) stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

// kick makes the loop look at its lanes again. kicks and seen let a test
// tell a kick the loop has not taken up yet (Worker.quiet).
func (s *shortLanes) kick() {
	s.kicks.Add(1)
	notify(s.kickCh)
}

// pending reports a kick the loop has not taken up yet.
func (s *shortLanes) pending() bool { return s.kicks.Load() != s.seen.Load() }

// add records a lane a claim just leased in short-job mode.
func (s *shortLanes) add(p quick.LaneLease) *shortLane {
	sl := &shortLane{p: p, since: s.r.w.clk.Now(), jobs: map[*jobState]struct{}{}}
	s.mu.Lock()
	s.lanes = append(s.lanes, sl)
	s.mu.Unlock()
	s.kick()
	return sl
}

// retire stops claims on sl; it goes back once its jobs are done.
func (s *shortLanes) retire(sl *shortLane) {
	sl.mu.Lock()
	sl.retired = true
	sl.mu.Unlock()
	s.kick()
}

func (s *shortLanes) snapshot() []*shortLane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*shortLane(nil), s.lanes...)
}

func (s *shortLanes) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lanes)
}

func (s *shortLanes) drop(sl *shortLane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.lanes {
		if x == sl {
			s.lanes = append(s.lanes[:i], s.lanes[i+1:]...)
			return
		}
	}
}

// lost records that sl's lease is gone: its jobs' handlers are cancelled
// (their keys vest again under whoever holds the lane now).
func (s *shortLanes) lost(sl *shortLane, err error) {
	sl.gone, sl.retired = true, true
	s.drop(sl)
	for _, st := range sl.snapshotJobs() {
		st.mu.Lock()
		if st.lane == sl {
			st.lane = nil
			if st.phase == phaseRunning || st.phase == phaseAcking {
				st.loseLocked(err)
			}
		}
		st.mu.Unlock()
	}
	s.r.w.log.Warn("worker: short-job lane lost; its jobs run again elsewhere", "task_type", s.r.taskType, "err", err)
}

// run keeps the runner's short lanes until the worker stops.
func (s *shortLanes) run() {
	defer close(s.done)
	defer s.loopState.forever()
	w := s.r.w
	for {
		s.seen.Store(s.kicks.Load())
		now := w.clk.Now()
		next := time.Time{}
		for _, sl := range s.snapshot() {
			if t := s.tend(sl, now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		var timer <-chan time.Time
		if next.IsZero() {
			s.loopState.forever()
		} else {
			if !next.After(now) {
				continue
			}
			timer = w.clk.After(next.Sub(now))
			s.loopState.at(next)
		}
		select {
		case <-timer:
		case <-s.kickCh:
		case <-s.stopCh:
			return
		case <-w.bg.Done():
			return
		}
		s.loopState.run()
	}
}

// tend does what sl needs now and returns when to look at it again (zero:
// it is gone).
func (s *shortLanes) tend(sl *shortLane, now time.Time) time.Time {
	w := s.r.w
	pl := w.q.Options().LaneLeaseTime
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.gone {
		s.drop(sl)
		return time.Time{}
	}
	jobs := sl.snapshotJobs()
	if sl.retired && len(jobs) == 0 {
		s.release(sl)
		return time.Time{}
	}
	due := sl.p.Deadline.Add(-pl / 3)
	if now.Before(due) {
		// A job that has run half a pointer lease, or a retired lane whose
		// jobs still run, is looked at again when the renewal falls due.
		return due
	}
	promote := sl.retired || now.Sub(sl.since) >= maxShortHold*pl
	for _, st := range jobs {
		if now.Sub(st.claimed) >= pl/2 {
			promote = true
		}
	}
	if promote {
		if ok, again := s.handBack(sl, jobs); ok {
			return time.Time{}
		} else if again {
			// Acks still in flight: extend and look again shortly.
			if !s.extend(sl, pl) {
				return time.Time{}
			}
			return now.Add(busyRetry)
		}
	}
	if !s.extend(sl, pl) {
		return time.Time{}
	}
	next := sl.p.Deadline.Add(-pl / 3)
	if !next.After(now) {
		// The renewal failed (and was logged): try again shortly, not in
		// a tight loop.
		next = now.Add(busyRetry)
	}
	return next
}

// extend renews sl's lease (sl.mu held); false when the lane is lost.
func (s *shortLanes) extend(sl *shortLane, pl time.Duration) bool {
	w := s.r.w
	ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
	defer cancel()
	p, err := renewLane(ctx, w.q, sl.p, pl)
	w.stats.extensions.Add(1)
	if err != nil {
		if quick.IsLaneLost(err) {
			s.lost(sl, err)
			return false
		}
		if w.bg.Err() == nil {
			countConflict(s.r, err)
			w.log.Warn("worker: short-job lane renewal failed; retrying", "task_type", s.r.taskType, "err", err)
		}
		return true
	}
	sl.p = p
	return true
}

// handBack moves sl's running jobs to leases of their own and hands the
// lane back (sl.mu held). ok: done; again: some job is busy (its ack in
// flight, or its handler in a lease operation), try later.
func (s *shortLanes) handBack(sl *shortLane, jobs []*jobState) (ok, again bool) {
	r, w := s.r, s.r.w
	var locked []*jobState
	unlock := func() {
		for _, st := range locked {
			st.mu.Unlock()
		}
	}
	for _, st := range jobs {
		if !st.mu.TryLock() {
			unlock()
			return false, true
		}
		locked = append(locked, st)
		if st.lane != sl {
			continue
		}
		if st.phase != phaseRunning {
			// Its ack is queued or committing: the hand-back waits for it.
			unlock()
			return false, true
		}
	}
	var running []*jobState
	var ls []quick.Lease
	for _, st := range locked {
		if st.lane == sl && st.phase == phaseRunning {
			running = append(running, st)
			ls = append(ls, st.lease)
		}
	}
	ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
	out, err := w.q.Consumer().HandBack(ctx, sl.p, ls, r.opts.Lease)
	cancel()
	if err != nil && quick.IsLeaseLost(err) && !quick.IsLaneLost(err) && len(out) == len(ls) {
		// The lane went back; some jobs' leases were gone (their keys
		// moved or cleared meanwhile): those come back unchanged, and
		// their next renewal finds them lost and cancels their handlers.
		err = nil
	}
	if err != nil {
		unlock()
		if quick.IsLaneLost(err) {
			s.lost(sl, err)
			return true, false
		}
		if w.bg.Err() == nil {
			countConflict(r, err)
			w.log.Warn("worker: handing a short-job lane back failed; retrying", "task_type", r.taskType, "err", err)
		}
		return false, true
	}
	for i, st := range running {
		if i < len(out) {
			st.lease = out[i]
		}
		st.lane = nil
		sl.removeJob(st)
	}
	unlock()
	sl.gone, sl.retired = true, true
	s.drop(sl)
	r.signalMore()
	if len(running) > 0 {
		w.keeper.kick()
	}
	return true, false
}

// release hands a retired lane with no job left back (sl.mu held).
func (s *shortLanes) release(sl *shortLane) {
	w := s.r.w
	sl.gone = true
	s.drop(sl)
	if w.killed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
	defer cancel()
	if err := w.q.Consumer().ReleaseLane(ctx, sl.p); err != nil && !quick.IsLaneLost(err) && w.bg.Err() == nil {
		w.log.Warn("worker: could not hand a short-job lane back; it returns when its lease lapses", "task_type", s.r.taskType, "err", err)
	}
	// The lane may have more vested jobs: the claim loops look again.
	s.r.signalMore()
}

// handBackAll hands every lane back at shutdown, after the acks are
// flushed: jobs still running (none after a full shutdown: they were
// abandoned) move to leases of their own.
func (s *shortLanes) handBackAll() {
	for _, sl := range s.snapshot() {
		sl.mu.Lock()
		if !sl.gone {
			jobs := sl.snapshotJobs()
			if len(jobs) == 0 {
				s.release(sl)
			} else if ok, _ := s.handBack(sl, jobs); !ok {
				s.r.w.log.Warn("worker: a short-job lane could not be handed back at shutdown; it returns when its lease lapses", "task_type", s.r.taskType)
			}
		}
		sl.mu.Unlock()
	}
}
