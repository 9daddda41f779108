package worker

import (
	"context"
	"sync"
	"time"

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

	loopState park
}

// busyRetry is how soon a job skipped because its handler held it (in a
// Checkpoint or CompleteWith) is looked at again.
const busyRetry = 100 * time.Millisecond

// extendTimeout bounds one renewal call, far under any lease.
const extendTimeout = 5 * time.Second

func newKeeper(w *Worker) *keeper {
	return &keeper{w: w, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
}

// kick makes the keeper look at its jobs again (a job started).
func (k *keeper) kick() { notify(k.kickCh) }

func (k *keeper) stop() {
	k.stopped.Do(func() { close(k.stopCh) })
	<-k.done
}

func (k *keeper) run() {
	defer close(k.done)
	defer k.loopState.forever()
	w := k.w
	for {
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
			// A handler in a Checkpoint or CompleteWith holds the job; a
			// checkpoint extends the lease anyway.
			if !st.mu.TryLock() {
				earliest(now.Add(busyRetry))
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
