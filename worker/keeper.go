package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// keeper renews the leases of the worker's running jobs. A lease is renewed
// when a third of it is left, and every lease due within the next twelfth
// of a lease is renewed with it, so a round is one quick.ExtendMany call
// per lease duration (500 leases a transaction) rather than one
// transaction per job. A renewal that finds a lease lost cancels the
// handler's context; the worker then acks nothing for that job.
type keeper struct {
	w       *Worker
	kickCh  chan struct{}
	stopCh  chan struct{}
	stopped sync.Once
	done    chan struct{}
	retryAt time.Time // after a failed round, when to try again

	// held are the jobs a round found held by another operation (a
	// handler's Checkpoint or CompleteWith, the runner settling its
	// outcome): a goroutine waits for each to be let go and wakes the
	// keeper (awaitRelease). The keeper does not retry on the clock: what
	// it waits for is the holder, which no clock advance moves.
	heldMu sync.Mutex
	held   map[*jobState]struct{}
	// heldByTest is a job a test holds on purpose while it advances the
	// clock (to stand for a handler stuck in a lease operation); waiting
	// for it does not make the worker busy (waitingOnLock).
	heldByTest atomic.Pointer[jobState]

	loopState   park
	kicks, seen atomic.Int64 // kicks not yet taken up (Worker.quiet)
}

// busyRetry is how soon the short-job keeper (short.go) looks again at a
// lane whose jobs' acks are in flight.
const busyRetry = 100 * time.Millisecond

// extendTimeout bounds one renewal call, far under any lease.
const extendTimeout = 5 * time.Second

func newKeeper(w *Worker) *keeper {
	return &keeper{w: w, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{}),
		held: map[*jobState]struct{}{}}
}

// kick makes the keeper look at its jobs again (a job started, or a held
// job was let go).
func (k *keeper) kick() {
	k.kicks.Add(1)
	notify(k.kickCh)
}

// pending reports a kick the loop has not taken up yet (none once it has
// exited).
func (k *keeper) pending() bool { return !k.exited() && k.kicks.Load() != k.seen.Load() }

func (k *keeper) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// awaitRelease wakes the keeper once st, which a round found held, is let
// go: one goroutine per held job, which takes and drops the job's mutex.
func (k *keeper) awaitRelease(st *jobState) {
	k.heldMu.Lock()
	if _, waiting := k.held[st]; waiting {
		k.heldMu.Unlock()
		return
	}
	k.held[st] = struct{}{}
	k.heldMu.Unlock()
	go func() {
		st.mu.Lock() // waits for the holder: the section is empty on purpose
		st.mu.Unlock()
		// Pending from here (Worker.quiet), before the wait is dropped:
		// the next round sees the job let go.
		k.kicks.Add(1)
		k.heldMu.Lock()
		delete(k.held, st)
		k.heldMu.Unlock()
		// And a round after the drop: one that found the job held again
		// in between registered no waiter for it.
		k.kick()
	}()
}

// waitingOnLock reports whether the keeper waits for a job held by another
// operation (other than one a test holds on purpose, heldByTest): the
// worker is not quiet then, since that operation, not the clock, moves it.
func (k *keeper) waitingOnLock() bool {
	if k.exited() {
		return false
	}
	k.heldMu.Lock()
	defer k.heldMu.Unlock()
	byTest := k.heldByTest.Load()
	for st := range k.held {
		if st != byTest {
			return true
		}
	}
	return false
}

func (k *keeper) stop() {
	k.stopped.Do(func() { close(k.stopCh) })
	<-k.done
}

func (k *keeper) run() {
	defer close(k.done)
	defer k.loopState.forever()
	w := k.w
	for {
		k.seen.Store(k.kicks.Load())
		now := w.clk.Now()
		next, again := k.round(now)
		if again {
			continue
		}
		var timer <-chan time.Time
		if next.IsZero() {
			k.loopState.forever()
		} else {
			timer = w.clk.After(next.Sub(now))
			k.loopState.at(next)
		}
		select {
		case <-timer:
		case <-k.kickCh:
		case <-k.stopCh:
			return
		case <-w.bg.Done():
			return
		}
		k.loopState.run()
	}
}

// round renews the leases due now. It returns when the next one falls due
// (zero if none), and whether it renewed any, in which case it should run
// again at once.
func (k *keeper) round(now time.Time) (next time.Time, renewed bool) {
	w := k.w
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	groups := map[time.Duration][]*jobState{}
	var order []time.Duration
	for _, r := range w.snapshotRunners() {
		lease := r.opts.Lease
		for _, st := range r.runningJobs() {
			// A handler in a Checkpoint or CompleteWith holds the job (a
			// checkpoint extends the lease anyway), or the runner is
			// settling its outcome: look again once it is let go.
			if !st.mu.TryLock() {
				k.awaitRelease(st)
				continue
			}
			// A job under a short lane is renewed with its lane (short.go).
			if st.phase != phaseRunning || st.lane != nil || w.killed.Load() {
				st.mu.Unlock()
				continue
			}
			renewAt := st.lease.Deadline.Add(-lease / 3)
			if renewAt.After(now.Add(lease / 12)) {
				earliest(renewAt)
				st.mu.Unlock()
				continue
			}
			if groups[lease] == nil {
				order = append(order, lease)
			}
			groups[lease] = append(groups[lease], st) // stays locked
		}
	}
	if len(order) == 0 {
		return next, false
	}
	if now.Before(k.retryAt) {
		for _, sts := range groups {
			unlockAll(sts)
		}
		earliest(k.retryAt)
		return next, false
	}
	renewed = true
	for _, lease := range order {
		sts := groups[lease]
		if !k.renew(sts, lease) {
			renewed = false
			k.retryAt = now.Add(min(lease/12, time.Second))
			earliest(k.retryAt)
		}
		unlockAll(sts)
	}
	return next, renewed
}

// renew extends the leases of locked jobs to now + lease.
func (k *keeper) renew(sts []*jobState, lease time.Duration) bool {
	w := k.w
	ls := make([]quick.Lease, len(sts))
	for i, st := range sts {
		ls[i] = st.lease
	}
	ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
	defer cancel()
	out, errs, err := w.q.ExtendMany(ctx, ls, lease)
	w.stats.extensions.Add(1)
	if err != nil {
		if w.bg.Err() == nil {
			countConflict(sts[0].r, err)
			w.log.Warn("worker: lease renewal failed; retrying", "jobs", len(sts), "err", err)
		}
		return false
	}
	for i, st := range sts {
		if errs[i] != nil {
			if quick.IsLeaseLost(errs[i]) {
				st.loseLocked(errs[i])
			}
			continue
		}
		st.lease = out[i]
	}
	return true
}

func unlockAll(sts []*jobState) {
	for _, st := range sts {
		st.mu.Unlock()
	}
}

// renewLane renews a short-job lane lease this worker holds
// (quick.Consumer.ExtendLane); the short-job keeper (short.go) calls it when
// a third of the lane lease is left. Its deliberate break skips the renewal
// and reports the lease unchanged: the lane lapses under its running jobs,
// and a takeover runs them again (TestShortLaneRenewedWhileItsJobsRun).
func renewLane(ctx context.Context, q *quick.Queue, p quick.LaneLease, d time.Duration) (quick.LaneLease, error) {
	if mutant.On("worker.short-renew") {
		return p, nil
	}
	return q.Consumer().ExtendLane(ctx, p, d)
}
