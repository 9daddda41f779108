package wake

import (
	"reflect"
	"sync"
)

// The in-process wake-up (issue 23). An enqueue that bumps a task type's
// wake key (a worker sleeps on it) also tells the workers of its own
// process at once, once its commit returns: they wake without waiting for
// the watch, which on a FoundationDB cluster fires about 10 ms after the
// commit (docs/fdb.md). Workers of other processes still wake by the
// watch. A worker subscribes one channel per task type for a database and
// a queue's root subspace; Notify sends to each without waiting (a channel
// already holding a wake-up keeps one).
//
// Hubs are keyed by the database value and the root's bytes, so a producer
// and a worker that opened their queues separately on one database still
// meet. A database whose type is not comparable gets no hub: its workers
// wake by the watch alone.

type hubKey struct {
	db   any
	root string
}

type hub struct {
	subs map[string]map[chan struct{}]int // task type -> channel -> count
}

var (
	mu   sync.Mutex
	hubs = map[hubKey]*hub{}
)

func keyFor(db any, root []byte) (hubKey, bool) {
	if db == nil || !reflect.TypeOf(db).Comparable() {
		return hubKey{}, false
	}
	return hubKey{db: db, root: string(root)}, true
}

// Subscribe has Notify(db, root, taskType) send on ch (without waiting)
// until the returned cancel is called. ch should have a buffer of one.
func Subscribe(db any, root []byte, taskType string, ch chan struct{}) (cancel func()) {
	k, ok := keyFor(db, root)
	if !ok {
		return func() {}
	}
	mu.Lock()
	h := hubs[k]
	if h == nil {
		h = &hub{subs: map[string]map[chan struct{}]int{}}
		hubs[k] = h
	}
	if h.subs[taskType] == nil {
		h.subs[taskType] = map[chan struct{}]int{}
	}
	h.subs[taskType][ch]++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			s := h.subs[taskType]
			if s[ch]--; s[ch] <= 0 {
				delete(s, ch)
			}
			if len(s) == 0 {
				delete(h.subs, taskType)
			}
			if len(h.subs) == 0 && hubs[k] == h {
				delete(hubs, k)
			}
		})
	}
}

// Notify wakes this process's workers of taskType on db and root: a send
// without waiting on each subscribed channel. It costs one map lookup when
// none is subscribed.
func Notify(db any, root []byte, taskType string) {
	k, ok := keyFor(db, root)
	if !ok {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	h := hubs[k]
	if h == nil {
		return
	}
	for ch := range h.subs[taskType] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
