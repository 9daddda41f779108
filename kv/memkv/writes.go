package memkv

import (
	"bytes"

	"github.com/quickfdb/quickfdb/kv"
)

// Mutations return no error in FDB's Go binding: an error raised by one is
// deferred, and the next read or the commit fails with it (FDB's
// ThreadSafeTransaction deferredError). The checks run in ReadYourWrites'
// order: use during commit, legal range, mutation type, key size, value size.

// mutationCheckLocked applies the checks every mutation starts with.
func (t *txn) mutationCheckLocked(key []byte) error {
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		return errUsedDuringCommit
	}
	if bytes.Compare(key, maxUserKey) >= 0 {
		return errOutsideLegalRange
	}
	return nil
}

// setDeferred records an error for the next read or the commit; as in FDB, a
// later one replaces an earlier one.
func (t *txn) setDeferred(err error) { t.deferred = err }

// writeCost is what a mutation with a write conflict range on key adds to
// GetApproximateSize (ReadYourWritesTransaction::set and atomicOp).
func writeCost(key, param []byte, conflict bool) int64 {
	n := int64(len(key)+len(param)) + mutationRefSize
	if conflict {
		n += keyRangeRefSize + int64(2*len(key)+1)
	}
	return n
}

// writeCheckLocked is mutationCheckLocked plus FDB's key and value size
// limits (2102, 2103), for mutations that write a value.
func (t *txn) writeCheckLocked(key, value []byte) error {
	if err := t.mutationCheckLocked(key); err != nil {
		return err
	}
	if len(key) > kv.MaxKeySize {
		return errKeyTooLarge
	}
	if len(value) > kv.MaxValueSize {
		return errValueTooLarge
	}
	return nil
}

// Set writes value at key.
func (t *txn) Set(key, value []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.writeCheckLocked(key, value); err != nil {
		t.setDeferred(err)
		return
	}
	k, v := cloneValue(key), cloneValue(value)
	t.w.set(k, v)
	t.size += writeCost(k, v, true)
	t.triggerLocked(k, v, true, true)
}

// Clear removes key.
func (t *txn) Clear(key []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.mutationCheckLocked(key); err != nil {
		t.setDeferred(err)
		return
	}
	if len(key) > kv.MaxKeySize {
		return // no such key can exist
	}
	k := cloneValue(key)
	t.w.clear(k)
	r := int64(2*len(k) + 1)
	t.size += r + keyRangeRefSize + keyRangeRefSize + r
	t.triggerLocked(k, nil, false, true)
}

// ClearRange removes every key in r.
func (t *txn) ClearRange(r kv.KeyRange) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		t.setDeferred(errUsedDuringCommit)
		return
	}
	if bytes.Compare(r.Begin, r.End) > 0 {
		t.setDeferred(errInvertedRange)
		return
	}
	if bytes.Compare(r.Begin, maxUserKey) > 0 || bytes.Compare(r.End, maxUserKey) > 0 {
		t.setDeferred(errOutsideLegalRange)
		return
	}
	b, e := truncateKey(r.Begin), truncateKey(r.End)
	if bytes.Compare(b, e) >= 0 {
		return
	}
	b, e = cloneValue(b), cloneValue(e)
	t.w.clearRange(b, e)
	n := int64(len(b) + len(e))
	t.size += n + mutationRefSize + keyRangeRefSize + n
	t.triggerRangeLocked(b, e)
}

// Atomic applies an atomic operation; it adds no read conflict.
func (t *txn) Atomic(mt kv.MutationType, key, param []byte) {
	switch mt {
	case kv.MutationSetVersionstampedKey:
		t.SetVersionstampedKey(key, param)
		return
	case kv.MutationSetVersionstampedValue:
		t.SetVersionstampedValue(key, param)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.mutationCheckLocked(key); err != nil {
		t.setDeferred(err)
		return
	}
	if !isAtomicOp(mt) {
		t.setDeferred(errInvalidMutation)
		return
	}
	if len(key) > kv.MaxKeySize {
		t.setDeferred(errKeyTooLarge)
		return
	}
	if len(param) > kv.MaxValueSize {
		t.setDeferred(errValueTooLarge)
		return
	}
	k, p := cloneValue(key), cloneValue(param)
	t.w.atomic(k, mt, p)
	t.size += writeCost(k, p, true)
	t.triggerLocked(k, nil, false, false)
}

// Add, Max, Min and CompareAndClear are the contract's named atomic
// operations.
func (t *txn) Add(key, param []byte)             { t.Atomic(kv.MutationAdd, key, param) }
func (t *txn) Max(key, param []byte)             { t.Atomic(kv.MutationMax, key, param) }
func (t *txn) Min(key, param []byte)             { t.Atomic(kv.MutationMin, key, param) }
func (t *txn) CompareAndClear(key, param []byte) { t.Atomic(kv.MutationCompareAndClear, key, param) }

// SetVersionstampedKey writes value at key with the commit's versionstamp
// placed at the offset in key's last 4 bytes. The client adds no write
// conflict range for it, but the committed key write-conflicts at the key it
// lands on (measured on FDB 7.3; commit.go); the range where the key may
// land becomes unreadable to this transaction (1036).
func (t *txn) SetVersionstampedKey(key, value []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.writeCheckLocked(key, value); err != nil {
		t.setDeferred(err)
		return
	}
	pos, ok := stampOffset(key)
	if !ok {
		t.setDeferred(errInvalidOperation)
		return
	}
	// The stamp will be at least the read version's, if one was taken
	// (FDB's getCachedReadVersion().orDefault(0)).
	var minVersion int64
	if t.hasRV {
		minVersion = t.rv.version
	}
	k, v := cloneValue(key), cloneValue(value)
	t.w.stampedKey(k, pos, v, minVersion)
	t.size += writeCost(k, v, false)
}

// SetVersionstampedValue writes at key a value with the commit's
// versionstamp placed at the offset in value's last 4 bytes. The key becomes
// unreadable to this transaction (1036).
func (t *txn) SetVersionstampedValue(key, value []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.writeCheckLocked(key, value); err != nil {
		t.setDeferred(err)
		return
	}
	if _, ok := stampOffset(value); !ok {
		t.setDeferred(errInvalidOperation)
		return
	}
	k, v := cloneValue(key), cloneValue(value)
	t.w.stampedValue(k, v)
	t.size += writeCost(k, v, true)
	t.triggerLocked(k, nil, false, false)
}

// conflictRangeCheckLocked validates a conflict range. An inverted range is
// rejected at the call, as the binding builds the KeyRange synchronously;
// the other errors are also deferred, as FDB raises them on its main thread.
func (t *txn) conflictRangeCheckLocked(r kv.KeyRange) error {
	if bytes.Compare(r.Begin, r.End) > 0 {
		return errInvertedRange
	}
	var err error
	switch {
	case t.commitStarted:
		t.g.fail(errUsedDuringCommit)
		err = errUsedDuringCommit
	case bytes.Compare(r.Begin, maxUserKey) > 0 || bytes.Compare(r.End, maxUserKey) > 0:
		err = errOutsideLegalRange
	}
	if err != nil {
		t.setDeferred(err)
	}
	return err
}

// AddReadConflictRange makes the transaction conflict as if it had read r.
// Like a read, it skips what the transaction's own writes determine. It does
// not take a read version: the range is checked from whichever read version
// the transaction ends up with.
func (t *txn) AddReadConflictRange(r kv.KeyRange) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.conflictRangeCheckLocked(r); err != nil {
		return err
	}
	b, e := truncateKey(r.Begin), truncateKey(r.End)
	if bytes.Compare(b, e) >= 0 {
		return nil
	}
	t.addReadConflictRangeLocked(kv.KeyRange{Begin: cloneValue(b), End: cloneValue(e)})
	return nil
}

// AddReadConflictKey makes the transaction conflict as if it had read key.
func (t *txn) AddReadConflictKey(key []byte) error {
	return t.AddReadConflictRange(kv.KeyRange{Begin: key, End: keyAfter(key)})
}

// AddWriteConflictRange makes other transactions conflict as if this one had
// written r. It also makes the transaction a writing one.
func (t *txn) AddWriteConflictRange(r kv.KeyRange) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.conflictRangeCheckLocked(r); err != nil {
		return err
	}
	b, e := truncateKey(r.Begin), truncateKey(r.End)
	if bytes.Compare(b, e) >= 0 {
		return nil
	}
	b, e = cloneValue(b), cloneValue(e)
	t.w.conflicts = append(t.w.conflicts, kv.KeyRange{Begin: b, End: e})
	t.size += int64(len(b)+len(e)) + keyRangeRefSize
	return nil
}

// AddWriteConflictKey makes other transactions conflict as if this one had
// written key.
func (t *txn) AddWriteConflictKey(key []byte) error {
	return t.AddWriteConflictRange(kv.KeyRange{Begin: key, End: keyAfter(key)})
}
