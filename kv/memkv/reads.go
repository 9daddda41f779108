package memkv

import (
	"bytes"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Sizes FDB adds to GetApproximateSize per entry (sizeof(KeyRangeRef) and
// sizeof(MutationRef) on 64-bit builds of release-7.3).
const (
	keyRangeRefSize = 32
	mutationRefSize = 56
)

// Get reads key, adding a read conflict on it.
func (t *txn) Get(key []byte) kv.Future[[]byte] { return t.get(key, false) }

// GetRange reads r, adding a read conflict on what it reads.
func (t *txn) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.RangeResult {
	return t.getRange(r, opts, false)
}

// snapshotView is a transaction's snapshot side: the same reads, no read
// conflicts.
type snapshotView struct{ t *txn }

func (s snapshotView) Get(key []byte) kv.Future[[]byte] { return s.t.get(key, true) }
func (s snapshotView) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.RangeResult {
	return s.t.getRange(r, opts, true)
}
func (s snapshotView) GetReadVersion() kv.Future[int64] { return s.t.GetReadVersion() }
func (s snapshotView) Snapshot() kv.ReadTransaction     { return s }

func (t *txn) get(key []byte, snapshot bool) kv.Future[[]byte] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readCheckLocked(); err != nil {
		return failed[[]byte](err)
	}
	val, present, at, err := t.readKeyLocked(key, snapshot)
	if err != nil {
		return &timedFuture[[]byte]{t: t, g: t.g, at: at, err: err}
	}
	if !present {
		return &timedFuture[[]byte]{t: t, g: t.g, at: at}
	}
	return &timedFuture[[]byte]{t: t, g: t.g, at: at, val: cloneValue(val)}
}

// readKeyLocked reads one key through the write map, as RYW's get does: a key
// the transaction's own writes determine is answered without storage, a read
// version or a read conflict. at is when a storage read would complete.
func (t *txn) readKeyLocked(key []byte, snapshot bool) (val []byte, present bool, at time.Time, err error) {
	if bytes.Compare(key, maxUserKey) >= 0 {
		return nil, false, at, errOutsideLegalRange
	}
	if len(key) > kv.MaxKeySize {
		// No stored key is that long (RYW returns "missing" at once).
		return nil, false, at, nil
	}
	kind, e := t.w.lookup(key)
	switch kind {
	case localUnreadable:
		return nil, false, at, errUnreadable
	case localKnown:
		if e == nil {
			return nil, false, at, nil // in a cleared range
		}
		val, present = e.apply(nil, false, nil)
		return val, present, at, nil
	}
	at = t.readAtLocked()
	if t.db.tooOld(t.rv.version) {
		return nil, false, at, errTooOld
	}
	val, present = t.rv.get(key)
	if kind == localDependent {
		val, present = e.apply(val, present, nil)
	}
	if !snapshot {
		t.addReadConflictLocked(key, keyAfter(key))
		t.size += int64(2*len(key)+1) + keyRangeRefSize
	}
	return val, present, at, nil
}

func (t *txn) addReadConflictLocked(b, e []byte) {
	t.reads = append(t.reads, kv.KeyRange{Begin: b, End: e})
}

// addReadConflictRangeLocked adds a read conflict on r minus the parts the
// transaction's own writes determine (FDB's updateConflictMap).
func (t *txn) addReadConflictRangeLocked(r kv.KeyRange) {
	cursor := r.Begin
	cost := int64(len(r.Begin)+len(r.End)) + keyRangeRefSize
	for _, p := range t.w.knownPieces(r.Begin, r.End) {
		if bytes.Compare(cursor, p.Begin) < 0 {
			t.addReadConflictLocked(cursor, p.Begin)
			t.size += cost
		}
		if bytes.Compare(p.End, cursor) > 0 {
			cursor = p.End
		}
	}
	if bytes.Compare(cursor, r.End) < 0 {
		t.addReadConflictLocked(cursor, r.End)
		t.size += cost
	}
}
