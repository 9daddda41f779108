package memkv

import (
	"bytes"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/tidwall/btree"
)

// The write map is a transaction's uncommitted writes, shaped after FDB's
// WriteMap (fdbclient/WriteMap.cpp) so that reads see them exactly as FDB's
// read-your-writes layer shows them:
//
//   - A point entry holds the operations on one key in call order. It is
//     independent when its first operation sets or clears the key: reads then
//     need nothing from storage and add no read conflict. An entry of atomic
//     operations alone is dependent: reads apply it to the stored value and
//     conflict on the key.
//   - Cleared ranges (ClearRange) hide storage. An atomic operation on a key
//     in a cleared range starts from "missing", so it is independent.
//   - Unreadable ranges are where a versionstamped key may land, and an entry
//     written with a versionstamped value is unreadable; reading either fails
//     with 1036. As in FDB, a later Set does not make such a key readable; a
//     Clear or ClearRange does.

type opKind uint8

const (
	opSet opKind = iota
	opClear
	opAtomic
	opStampedValue // SetVersionstampedValue; param carries the offset suffix
)

type op struct {
	kind   opKind
	atomic kv.MutationType
	param  []byte
}

type wentry struct {
	key        []byte
	ops        []op
	unreadable bool
}

func entryLess(a, b *wentry) bool { return bytes.Compare(a.key, b.key) < 0 }

func (e *wentry) independent() bool { return e.ops[0].kind != opAtomic }

// apply runs the entry's operations over a starting value. stamp is the
// commit's versionstamp; it is nil for reads, which never see a stamped value
// because such entries are unreadable.
func (e *wentry) apply(val []byte, present bool, stamp []byte) ([]byte, bool) {
	for _, o := range e.ops {
		switch o.kind {
		case opSet:
			val, present = o.param, true
		case opClear:
			val, present = nil, false
		case opStampedValue:
			pos, _ := stampOffset(o.param)
			val, present = placeStamp(o.param, pos, stamp), true
		case opAtomic:
			val, present = applyAtomic(o.atomic, val, present, o.param)
		}
	}
	return val, present
}

// stampedKey is a pending SetVersionstampedKey.
type stampedKey struct {
	param []byte // key with the placeholder and the 4-byte offset suffix
	pos   int
	value []byte
	// placed is the key with the lowest stamp it can get; a ClearRange over
	// it drops the operation, as clearing FDB's write map does.
	placed []byte
}

type writeMap struct {
	points     *btree.BTreeG[*wentry]
	cleared    rangeSet
	unreadable rangeSet
	stamped    []stampedKey
	conflicts  []kv.KeyRange // AddWriteConflictRange
}

func (w *writeMap) entries() *btree.BTreeG[*wentry] {
	if w.points == nil {
		w.points = btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true})
	}
	return w.points
}

func (w *writeMap) entry(k []byte) *wentry {
	if w.points == nil {
		return nil
	}
	e, _ := w.points.Get(&wentry{key: k})
	return e
}

// readOnly reports whether the transaction wrote nothing and added no write
// conflict range: FDB then commits it without contacting the cluster.
func (w *writeMap) readOnly() bool {
	return (w.points == nil || w.points.Len() == 0) && w.cleared.empty() &&
		len(w.stamped) == 0 && len(w.conflicts) == 0
}

// unreadableAt reports whether a key with no entry of its own is unreadable.
func (w *writeMap) unreadableAt(k []byte) bool {
	_, ok := w.unreadable.containing(k)
	return ok
}

func (w *writeMap) set(k, v []byte) {
	e := w.entry(k)
	unreadable := (e != nil && e.unreadable) || (e == nil && w.unreadableAt(k))
	w.entries().Set(&wentry{key: k, ops: []op{{kind: opSet, param: v}}, unreadable: unreadable})
}

// clear removes one key. Like FDB, which clears the single-key range, it also
// makes the key readable again.
func (w *writeMap) clear(k []byte) {
	w.entries().Set(&wentry{key: k, ops: []op{{kind: opClear}}})
}

func (w *writeMap) clearRange(b, e []byte) {
	if w.points != nil {
		w.points.DeleteRange(&wentry{key: b}, &wentry{key: e}, &btree.DeleteRangeOptions{NoReturn: true})
	}
	w.cleared.add(b, e)
	w.unreadable.remove(b, e)
	kept := w.stamped[:0]
	for _, s := range w.stamped {
		if bytes.Compare(s.placed, b) >= 0 && bytes.Compare(s.placed, e) < 0 {
			continue
		}
		kept = append(kept, s)
	}
	w.stamped = kept
}

func (w *writeMap) atomic(k []byte, mt kv.MutationType, param []byte) {
	o := op{kind: opAtomic, atomic: mt, param: param}
	e := w.entry(k)
	switch {
	case e == nil:
		ne := &wentry{key: k, unreadable: w.unreadableAt(k)}
		if _, cleared := w.cleared.containing(k); cleared {
			// The key is known to be missing: fold the operation into an
			// independent set or clear.
			ne.ops = []op{folded(applyAtomic(mt, nil, false, param))}
		} else {
			ne.ops = []op{o}
		}
		w.entries().Set(ne)
	case !e.unreadable && e.independent():
		// The value is known: fold the operation into it.
		cur, present := e.apply(nil, false, nil)
		w.entries().Set(&wentry{key: k, ops: []op{folded(applyAtomic(mt, cur, present, param))}})
	default:
		// Dependent, or unreadable: keep the chain to apply at commit. A new
		// entry is stored so that slices handed to earlier readers of e, and
		// a commit request built from it, never change.
		ops := make([]op, len(e.ops), len(e.ops)+1)
		copy(ops, e.ops)
		w.entries().Set(&wentry{key: k, ops: append(ops, o), unreadable: e.unreadable})
	}
}

func folded(v []byte, present bool) op {
	if !present {
		return op{kind: opClear}
	}
	return op{kind: opSet, param: v}
}

func (w *writeMap) stampedValue(k, param []byte) {
	w.entries().Set(&wentry{key: k, ops: []op{{kind: opStampedValue, param: param}}, unreadable: true})
}

func (w *writeMap) stampedKey(param []byte, pos int, value []byte, minVersion int64) {
	b, e := versionstampKeyRange(param, pos, minVersion)
	w.unreadable.add(b, e)
	// Earlier writes in the landing range still commit, but become
	// unreadable too: FDB flushes them and replaces the range with an
	// unreadable one (addUnmodifiedAndUnreadableRange).
	if w.points != nil {
		var marked []*wentry
		w.points.Ascend(&wentry{key: b}, func(en *wentry) bool {
			if bytes.Compare(en.key, e) >= 0 {
				return false
			}
			if !en.unreadable {
				marked = append(marked, &wentry{key: en.key, ops: en.ops, unreadable: true})
			}
			return true
		})
		for _, en := range marked {
			w.points.Set(en)
		}
	}
	w.stamped = append(w.stamped, stampedKey{param: param, pos: pos, value: value, placed: b})
}

// localKind classifies what the write map knows about one key.
type localKind uint8

const (
	localUnknown    localKind = iota // storage decides
	localKnown                       // the transaction's own writes decide
	localDependent                   // atomic operations over the stored value
	localUnreadable                  // reading fails with 1036
)

// lookup tells how the transaction sees key k.
func (w *writeMap) lookup(k []byte) (localKind, *wentry) {
	if e := w.entry(k); e != nil {
		switch {
		case e.unreadable:
			return localUnreadable, e
		case e.independent():
			return localKnown, e
		default:
			return localDependent, e
		}
	}
	if w.unreadableAt(k) {
		return localUnreadable, nil
	}
	if _, ok := w.cleared.containing(k); ok {
		return localKnown, nil
	}
	return localUnknown, nil
}

// knownPieces returns the parts of [b, e) the transaction's own writes fully
// determine, in order: cleared ranges and keys with independent readable
// entries. Reads add no read conflict there (FDB's updateConflictMap).
func (w *writeMap) knownPieces(b, e []byte) []kv.KeyRange {
	cleared := w.cleared.overlapping(b, e)
	if w.points == nil || w.points.Len() == 0 {
		return cleared
	}
	var out []kv.KeyRange
	ci := 0
	w.points.Ascend(&wentry{key: b}, func(en *wentry) bool {
		if bytes.Compare(en.key, e) >= 0 {
			return false
		}
		for ci < len(cleared) && bytes.Compare(cleared[ci].Begin, en.key) <= 0 {
			out = append(out, cleared[ci])
			ci++
		}
		if !en.unreadable && en.independent() {
			out = append(out, kv.KeyRange{Begin: en.key, End: keyAfter(en.key)})
		}
		return true
	})
	return append(out, cleared[ci:]...)
}
