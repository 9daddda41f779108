package memkv

import (
	"bytes"
	"context"
	"sync"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/tidwall/btree"
)

// watch is a watch on one key. It remembers the value its transaction could
// read (read version plus its own writes). It is armed when the transaction
// commits and fires on the first later commit that leaves the key with a
// different value; since each commit is checked, A→B→A is not missed here,
// which FDB allows but does not promise.
type watch struct {
	reg     *watchRegistry // nil for a watch that failed at creation
	key     []byte
	val     []byte
	present bool

	done chan struct{}
	once sync.Once
	err  error
}

var _ kv.Watch = (*watch)(nil)

func failedWatch(err error) *watch {
	w := &watch{done: make(chan struct{})}
	w.finish(err)
	return w
}

// finish settles the watch: nil when it fired, else its error.
func (w *watch) finish(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.done)
	})
}

func (w *watch) differs(val []byte, present bool) bool {
	return present != w.present || !bytes.Equal(val, w.val)
}

// Wait blocks until the watch fires, fails, or ctx is done.
func (w *watch) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		select {
		case <-w.done:
			return w.err
		default:
		}
		return ctx.Err()
	}
}

// Cancel releases the watch; Wait then returns 1101 unless it had already
// fired or failed.
func (w *watch) Cancel() {
	if w.reg != nil {
		w.reg.remove(w)
	}
	w.finish(errOperationCancelled)
}

// Watch arms a watch on key when this transaction commits. Like FDB's, the
// watch reads key (a serializable read: it adds a read conflict unless the
// transaction's own writes determine the value), and a later write to key in
// this transaction that changes the value fires it at once.
func (t *txn) Watch(key []byte) kv.Watch {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deferred != nil {
		return failedWatch(t.deferred)
	}
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		return failedWatch(errUsedDuringCommit)
	}
	t.checkDeadlineLocked()
	if err := t.g.failure(); err != nil {
		return failedWatch(err)
	}
	if bytes.Compare(key, maxUserKey) >= 0 {
		return failedWatch(errOutsideLegalRange)
	}
	if len(key) > kv.MaxKeySize {
		return failedWatch(errKeyTooLarge)
	}
	val, present, _, err := t.readKeyLocked(key, false)
	if err != nil {
		return failedWatch(err)
	}
	w := &watch{reg: t.db.watches, key: cloneValue(key), val: val, present: present, done: make(chan struct{})}
	t.watches = append(t.watches, w)
	return w
}

// triggerLocked fires the transaction's unarmed watches on key when a write
// changes the value they saw; known is false when the new value depends on
// storage (an atomic operation), which FDB counts as a change.
func (t *txn) triggerLocked(key, val []byte, present, known bool) {
	if len(t.watches) == 0 {
		return
	}
	kept := t.watches[:0]
	for _, w := range t.watches {
		if bytes.Equal(w.key, key) && (!known || w.differs(val, present)) {
			w.finish(nil)
			continue
		}
		kept = append(kept, w)
	}
	t.watches = kept
}

// triggerRangeLocked fires unarmed watches on keys in [b, e) that saw a
// value, when the range is cleared.
func (t *txn) triggerRangeLocked(b, e []byte) {
	if len(t.watches) == 0 {
		return
	}
	kept := t.watches[:0]
	for _, w := range t.watches {
		if w.present && bytes.Compare(w.key, b) >= 0 && bytes.Compare(w.key, e) < 0 {
			w.finish(nil)
			continue
		}
		kept = append(kept, w)
	}
	t.watches = kept
}

// watchRegistry holds the database's armed watches. Arming and firing happen
// under the commit lock, so a watch cannot miss a commit between its arming
// and its registration.
type watchRegistry struct {
	mu    sync.Mutex
	max   int
	n     int
	keys  btree.Map[string, []*watch]
	close error // set by closeAll: later arms fail with it
}

func newWatchRegistry(max int) *watchRegistry { return &watchRegistry{max: max} }

func (r *watchRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// arm registers w, given the key's value as of the arming commit. Beyond
// MaxWatches armed at once the watch fails with 1032, as FDB's
// too_many_watches; a watch whose value already changed fires at once.
func (r *watchRegistry) arm(w *watch, cur []byte, present bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-w.done:
		return // cancelled, or fired by its own transaction
	default:
	}
	switch {
	case r.close != nil:
		w.finish(r.close)
	case r.n >= r.max:
		w.finish(errTooManyWatches)
	case w.differs(cur, present):
		w.finish(nil)
	default:
		k := string(w.key)
		ws, _ := r.keys.Get(k)
		r.keys.Set(k, append(ws, w))
		r.n++
	}
}

// changed fires the watches on key whose value differs from the new one.
func (r *watchRegistry) changed(key []byte, cur []byte, present bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fireLocked(string(key), func(w *watch) bool { return w.differs(cur, present) })
}

// cleared fires the watches on keys in [b, e) that saw a value.
func (r *watchRegistry) cleared(b, e []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return
	}
	var keys []string
	end := string(e)
	r.keys.Ascend(string(b), func(k string, _ []*watch) bool {
		if k >= end {
			return false
		}
		keys = append(keys, k)
		return true
	})
	for _, k := range keys {
		r.fireLocked(k, func(w *watch) bool { return w.present })
	}
}

func (r *watchRegistry) fireLocked(k string, fires func(*watch) bool) {
	ws, ok := r.keys.Get(k)
	if !ok {
		return
	}
	var kept []*watch
	for _, w := range ws {
		if fires(w) {
			w.finish(nil)
			r.n--
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 {
		r.keys.Delete(k)
	} else {
		r.keys.Set(k, kept)
	}
}

func (r *watchRegistry) remove(w *watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := string(w.key)
	ws, ok := r.keys.Get(k)
	if !ok {
		return
	}
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			r.n--
			break
		}
	}
	if len(ws) == 0 {
		r.keys.Delete(k)
	} else {
		r.keys.Set(k, ws)
	}
}

func (r *watchRegistry) closeAll(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.close = err
	r.keys.Scan(func(_ string, ws []*watch) bool {
		for _, w := range ws {
			w.finish(err)
		}
		return true
	})
	r.keys.Clear()
	r.n = 0
}
