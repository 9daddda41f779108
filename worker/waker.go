package worker

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/kv"
)

// waker lets an idle claim loop sleep on an FDB watch of its task type's
// wake key (internal/wake.WakeKey) instead of polling.
//
// Enqueue bumps the wake key only when it matters: when a job it writes
// vests now and a worker sleeps. A sleeping worker says so by raising the
// task type's sleep key (internal/wake.SleepKey) to the time its sleep ends,
// with an atomic max; the enqueuer reads it (a serializable read, so a
// registration landing during the enqueue makes it retry and see it) and
// adds 1 to the wake key only while that time is ahead. With no sleeper an enqueue
// writes nothing more. A deadline rather than a count of sleepers needs no
// decrement when a worker wakes (one transaction less per sleep) and
// cannot leak: a worker that dies asleep stops counting when its sleep
// would have ended.
//
// Before every claim that follows an idle sleep, the loop re-arms the
// watch if it fired, and after a sleep that timed out also registers its
// next sleep. A watch arms against the value its transaction read, so a
// bump committed after that read fires it, and a job committed before it is
// seen by the claim, which reads later. Before every sleep the loop checks
// that a registration covers it; when none does (the first sleep after a
// busy spell, or a wake-up that outlasted the registration) it registers
// after the empty claim and claims once more before sleeping: an enqueue
// that committed between the two is seen by that claim. A loop woken by
// the watch does not raise the sleep key before its claim: that commit
// (GRV and commit) would delay the job that woke it, and the check before
// the next sleep does it when needed.
type waker struct {
	r     *runner
	fired chan struct{}

	mu     sync.Mutex
	watch  kv.Watch  // armed watch, nil if none
	until  time.Time // latest sleep end registered
	closed bool
}

func newWaker(r *runner) *waker { return &waker{r: r, fired: make(chan struct{}, 1)} }

// covers reports whether a watch is armed and the registration lasts until
// end.
func (k *waker) covers(end time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.watch != nil && !k.until.Before(end)
}

// register raises the sleep key to until (one atomic max) unless a
// registration of this waker already lasts that long, and arms the watch if
// none is (a read-only transaction: a read, no commit). A zero until only
// arms the watch.
func (k *waker) register(ctx context.Context, until time.Time) error {
	k.mu.Lock()
	need, closed := k.watch == nil, k.closed
	// The sleep key only grows (an atomic max), so what this waker
	// registered is still there: raising it again to no later a time is a
	// commit (a GRV and a commit round trip) for nothing.
	raise := until.After(k.until)
	k.mu.Unlock()
	if closed || !need && !raise {
		return nil
	}
	q, tt := k.r.w.q, k.r.taskType
	// The watch goes in a read-only transaction of its own: a watch reads
	// its key, and in a transaction that also writes, that read would
	// conflict with every enqueue's bump of the wake key, so under load the
	// registration would retry again and again. The registration is a
	// blind atomic max and can never conflict. The two run at once, and
	// both are done before the claim that follows reads anything.
	var (
		wt   kv.Watch
		werr error
		wg   sync.WaitGroup
	)
	if need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			werr = q.DB().Transact(ctx, func(tr kv.Transaction) error {
				if wt != nil {
					wt.Cancel()
				}
				wt = tr.Watch(wake.WakeKey(q.Root(), tt))
				return nil
			})
		}()
	}
	var err error
	if raise {
		err = q.DB().Transact(ctx, func(tr kv.Transaction) error {
			tr.Max(wake.SleepKey(q.Root(), tt), le64(until.UnixMilli()))
			return nil
		})
	}
	wg.Wait()
	if werr != nil && wt != nil {
		wt.Cancel()
		wt = nil
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		if wt != nil {
			wt.Cancel()
		}
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if until.After(k.until) {
		k.until = until
	}
	if wt != nil {
		if k.closed {
			wt.Cancel()
		} else {
			k.watch = wt
			go k.wait(wt)
		}
	}
	return nil
}

func (k *waker) wait(wt kv.Watch) {
	err := wt.Wait(k.r.w.bg)
	k.mu.Lock()
	if k.watch == wt {
		k.watch = nil
	}
	k.mu.Unlock()
	switch {
	case err == nil:
		notify(k.fired)
	case errors.Is(err, kv.ErrOperationCancelled) || k.r.w.bg.Err() != nil:
	default:
		// Too many watches, or the like: the loop re-arms at its next sleep
		// and polls meanwhile.
		k.r.w.log.Debug("worker: wake-up watch failed", "task_type", k.r.taskType, "err", err)
	}
}

// bump wakes the task type's sleeping workers, as a stop does after
// releasing jobs that should run at once.
func (k *waker) bump(ctx context.Context) error {
	q := k.r.w.q
	return q.DB().Transact(ctx, func(tr kv.Transaction) error {
		tr.Add(wake.WakeKey(q.Root(), k.r.taskType), le64(1))
		return nil
	})
}

// close cancels the watch; the waker arms no more.
func (k *waker) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.watch != nil {
		k.watch.Cancel()
		k.watch = nil
	}
}

func le64(v int64) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(v))
}
