package worker

import (
	"context"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Migration: a queue opened with quick.LayoutZones puts new jobs in zones,
// but jobs written before in the lanes layout (schema 1) stay where they
// are until they run. A zones runner looks every legacyCheck for any
// schema-1 schedule key of its task type (one range read, limit 1): while
// there is one (vested, delayed or leased), it runs the lanes machinery
// beside the zones claims (heartbeat, lanes.Tracker, the lanes claim loop),
// sharing the handler slots; once there is none, the lanes claim loop goes
// dormant and the heartbeat leaves the registry, so an idle zones worker
// reads no membership. A job that comes back to schema 1 later (a requeued
// old dead letter) wakes them again within legacyCheck.
//
// Keys: a snapshot range read of S (1, "s", type) with limit 1.

// legacyCheck is how often a zones runner looks for schema-1 jobs.
const legacyCheck = 5 * time.Second

// legacy says whether a zones runner's task type has schema-1 jobs left.
type legacy struct {
	mu    sync.Mutex
	on    bool
	known bool
	ch    chan struct{} // closed when on changes
}

func (l *legacy) get() (on, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.on, l.known
}

// changed is closed at the next change.
func (l *legacy) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

func (l *legacy) set(on bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := l.on != on || !l.known
	l.on, l.known = on, true
	if changed && l.ch != nil {
		close(l.ch)
		l.ch = nil
	}
	return changed
}

// hasSchema1 reports whether the task type has any schema-1 schedule key.
func (r *runner) hasSchema1(ctx context.Context) (bool, error) {
	q := r.w.q
	b, e := q.Root().Sub("s", r.taskType).Range()
	found := false
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: 1}).GetSliceWithError()
		found = len(kvs) > 0
		return err
	})
	return found, err
}

// legacyLoop follows whether schema-1 jobs are left, until the worker stops.
func (r *runner) legacyLoop() {
	defer r.legacyState.forever()
	w := r.w
	for !w.stopping() {
		ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
		on, err := r.hasSchema1(ctx)
		cancel()
		switch {
		case err != nil:
			if w.bg.Err() != nil {
				return
			}
			w.log.Warn("worker: cannot tell whether schema-1 jobs are left; retrying", "task_type", r.taskType, "err", err)
		case r.legacy.set(on):
			if on {
				w.log.Info("worker: schema-1 jobs left; draining them beside the zones", "task_type", r.taskType)
			} else {
				w.log.Info("worker: no schema-1 job left; zones only", "task_type", r.taskType)
			}
		}
		timer := w.clk.After(legacyCheck)
		r.legacyState.at(w.clk.Now().Add(legacyCheck))
		select {
		case <-timer:
		case <-w.stopCh:
			return
		case <-w.bg.Done():
			return
		}
		r.legacyState.run()
	}
}
