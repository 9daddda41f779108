package memkv

import (
	"bytes"
	"slices"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/tidwall/btree"
)

// maxUserKey is the first key outside the normal keyspace. Without FDB's
// system-key options, keys at or past it are illegal (2004).
var maxUserKey = []byte{0xff}

// keyAfter is the first key after k (k followed by a zero byte).
func keyAfter(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}

// cloneValue copies v; a present empty value stays non-nil, as the contract
// distinguishes it from a missing key.
func cloneValue(v []byte) []byte {
	out := make([]byte, len(v))
	copy(out, v)
	return out
}

// truncateKey shortens a range bound longer than any legal key, as FDB does:
// no stored key is longer than MaxKeySize, so cutting a bound to
// MaxKeySize+1 bytes keeps the same set of keys on each side.
func truncateKey(k []byte) []byte {
	if len(k) > kv.MaxKeySize+1 {
		return k[:kv.MaxKeySize+1]
	}
	return k
}

// coalesce sorts ranges and merges those that overlap or touch, so the
// resolver and the size check see FDB's coalesced conflict ranges.
func coalesce(rs []kv.KeyRange) []kv.KeyRange {
	if len(rs) < 2 {
		return rs
	}
	slices.SortFunc(rs, func(a, b kv.KeyRange) int { return bytes.Compare(a.Begin, b.Begin) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if bytes.Compare(r.Begin, last.End) <= 0 {
			if bytes.Compare(r.End, last.End) > 0 {
				last.End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// rangeSet is a set of keys held as disjoint, non-touching half-open ranges,
// ordered by begin. The write map uses it for cleared and unreadable ranges.
// The zero value is an empty set.
type rangeSet struct {
	t *btree.BTreeG[kv.KeyRange]
}

func rangeLess(a, b kv.KeyRange) bool { return bytes.Compare(a.Begin, b.Begin) < 0 }

func (s *rangeSet) tree() *btree.BTreeG[kv.KeyRange] {
	if s.t == nil {
		s.t = btree.NewBTreeGOptions(rangeLess, btree.Options{NoLocks: true})
	}
	return s.t
}

func (s *rangeSet) empty() bool { return s.t == nil || s.t.Len() == 0 }

// floor returns the range with the greatest begin not after k.
func (s *rangeSet) floor(k []byte) (kv.KeyRange, bool) {
	var out kv.KeyRange
	found := false
	if s.empty() {
		return out, false
	}
	s.t.Descend(kv.KeyRange{Begin: k}, func(r kv.KeyRange) bool {
		out, found = r, true
		return false
	})
	return out, found
}

// containing returns the range holding k, if any.
func (s *rangeSet) containing(k []byte) (kv.KeyRange, bool) {
	r, ok := s.floor(k)
	if ok && bytes.Compare(k, r.End) < 0 {
		return r, true
	}
	return kv.KeyRange{}, false
}

// covers reports whether every key in [b, e) is in the set.
func (s *rangeSet) covers(b, e []byte) bool {
	r, ok := s.containing(b)
	return ok && bytes.Compare(e, r.End) <= 0
}

// intersects reports whether some key in [b, e) is in the set.
func (s *rangeSet) intersects(b, e []byte) bool {
	if s.empty() || bytes.Compare(b, e) >= 0 {
		return false
	}
	if _, ok := s.containing(b); ok {
		return true
	}
	hit := false
	s.t.Ascend(kv.KeyRange{Begin: b}, func(r kv.KeyRange) bool {
		hit = bytes.Compare(r.Begin, e) < 0
		return false
	})
	return hit
}

// overlapping returns the parts of the set inside [b, e), in order.
func (s *rangeSet) overlapping(b, e []byte) []kv.KeyRange {
	if s.empty() {
		return nil
	}
	var out []kv.KeyRange
	if r, ok := s.containing(b); ok {
		out = append(out, kv.KeyRange{Begin: b, End: minKey(r.End, e)})
	}
	s.t.Ascend(kv.KeyRange{Begin: keyAfter(b)}, func(r kv.KeyRange) bool {
		if bytes.Compare(r.Begin, e) >= 0 {
			return false
		}
		out = append(out, kv.KeyRange{Begin: r.Begin, End: minKey(r.End, e)})
		return true
	})
	return out
}

// add inserts [b, e), merging it with the ranges it overlaps or touches.
func (s *rangeSet) add(b, e []byte) {
	if bytes.Compare(b, e) >= 0 {
		return
	}
	t := s.tree()
	if r, ok := s.floor(b); ok && bytes.Compare(r.End, b) >= 0 {
		b = r.Begin
		e = maxKey(e, r.End)
		t.Delete(r)
	}
	var doomed []kv.KeyRange
	t.Ascend(kv.KeyRange{Begin: b}, func(r kv.KeyRange) bool {
		if bytes.Compare(r.Begin, e) > 0 {
			return false
		}
		e = maxKey(e, r.End)
		doomed = append(doomed, r)
		return true
	})
	for _, r := range doomed {
		t.Delete(r)
	}
	t.Set(kv.KeyRange{Begin: b, End: e})
}

// remove takes [b, e) out of the set, splitting ranges that straddle it.
func (s *rangeSet) remove(b, e []byte) {
	if s.empty() || bytes.Compare(b, e) >= 0 {
		return
	}
	t := s.t
	var keep []kv.KeyRange
	if r, ok := s.floor(b); ok && bytes.Compare(r.Begin, b) < 0 && bytes.Compare(r.End, b) > 0 {
		t.Delete(r)
		keep = append(keep, kv.KeyRange{Begin: r.Begin, End: b})
		if bytes.Compare(r.End, e) > 0 {
			keep = append(keep, kv.KeyRange{Begin: e, End: r.End})
		}
	}
	var doomed []kv.KeyRange
	t.Ascend(kv.KeyRange{Begin: b}, func(r kv.KeyRange) bool {
		if bytes.Compare(r.Begin, e) >= 0 {
			return false
		}
		doomed = append(doomed, r)
		if bytes.Compare(r.End, e) > 0 {
			keep = append(keep, kv.KeyRange{Begin: e, End: r.End})
		}
		return true
	})
	for _, r := range doomed {
		t.Delete(r)
	}
	for _, r := range keep {
		t.Set(r)
	}
}

// all returns the set's ranges in order.
func (s *rangeSet) all() []kv.KeyRange {
	if s.empty() {
		return nil
	}
	return s.t.Items()
}

func minKey(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}
