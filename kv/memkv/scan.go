package memkv

import (
	"bytes"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/tidwall/btree"
)

// scanLocked merges storage (view, nil when not needed) with the write map
// over r. region is what the scan covered, the read-conflict range FDB's RYW
// derives (getKnownKeyRange): all of r when the scan ran to its end; when a
// limit stopped it, up to and including the last key returned (forward) or
// from it to the end (reverse).
func (t *txn) scanLocked(view *tree, r kv.KeyRange, rowLimit, byteLimit int, reverse bool) (batch, kv.KeyRange, error) {
	var out batch
	s := newCursor(view, r, reverse)
	defer s.release()
	w := newEntryCursor(t.w.points, r, reverse)
	defer w.release()
	// before reports whether key a comes first in scan order.
	before := func(a, b []byte) bool {
		if reverse {
			return bytes.Compare(a, b) > 0
		}
		return bytes.Compare(a, b) < 0
	}
	nbytes := 0
	for s.ok || w.ok {
		var key, val []byte
		var present bool
		if w.ok && (!s.ok || !before(s.key(), w.e.key)) {
			e := w.e
			if e.unreadable {
				return batch{}, kv.KeyRange{}, errUnreadable
			}
			var stored []byte
			var has bool
			if s.ok && bytes.Equal(s.key(), e.key) {
				stored, has = s.it.Item().val, true
				s.advance()
			}
			if e.independent() {
				stored, has = nil, false
			}
			key = e.key
			val, present = e.apply(stored, has, nil)
			w.advance()
		} else {
			k := s.key()
			if c, ok := t.w.cleared.containing(k); ok {
				s.skip(c) // storage the transaction cleared
				continue
			}
			key, val, present = k, s.it.Item().val, true
			s.advance()
		}
		if !present {
			continue
		}
		out.kvs = append(out.kvs, kv.KeyValue{Key: cloneValue(key), Value: cloneValue(val)})
		nbytes += len(key) + len(val) + 8
		if (rowLimit > 0 && len(out.kvs) >= rowLimit) || (byteLimit > 0 && nbytes >= byteLimit) {
			out.more = true
			break
		}
	}
	region := r
	if out.more {
		last := out.kvs[len(out.kvs)-1].Key
		if reverse {
			region.Begin = last
		} else {
			region.End = keyAfter(last)
		}
	}
	if t.w.unreadable.intersects(region.Begin, region.End) {
		return batch{}, kv.KeyRange{}, errUnreadable
	}
	return out, region, nil
}

// cursor walks a snapshot's keys inside a range, in either direction.
type cursor struct {
	it      btree.IterG[item]
	r       kv.KeyRange
	reverse bool
	ok      bool
	live    bool
}

func newCursor(view *tree, r kv.KeyRange, reverse bool) *cursor {
	c := &cursor{r: r, reverse: reverse}
	if view == nil {
		return c
	}
	c.it, c.live = view.Iter(), true
	if reverse {
		c.seekBefore(r.End)
	} else {
		c.ok = c.it.Seek(item{key: r.Begin})
		c.clip()
	}
	return c
}

func (c *cursor) key() []byte { return c.it.Item().key }

// seekBefore positions at the last key before k.
func (c *cursor) seekBefore(k []byte) {
	if c.it.Seek(item{key: k}) {
		c.ok = c.it.Prev()
	} else {
		c.ok = c.it.Last()
	}
	c.clip()
}

func (c *cursor) clip() {
	if !c.ok {
		return
	}
	if c.reverse {
		c.ok = bytes.Compare(c.key(), c.r.Begin) >= 0
	} else {
		c.ok = bytes.Compare(c.key(), c.r.End) < 0
	}
}

func (c *cursor) advance() {
	if c.reverse {
		c.ok = c.it.Prev()
	} else {
		c.ok = c.it.Next()
	}
	c.clip()
}

// skip moves past a cleared range in one seek instead of key by key.
func (c *cursor) skip(cleared kv.KeyRange) {
	if c.reverse {
		c.seekBefore(cleared.Begin)
		return
	}
	c.ok = c.it.Seek(item{key: cleared.End})
	c.clip()
}

func (c *cursor) release() {
	if c.live {
		c.it.Release()
	}
}

// entryCursor walks the write map's point entries inside a range.
type entryCursor struct {
	it      btree.IterG[*wentry]
	r       kv.KeyRange
	reverse bool
	ok      bool
	live    bool
	e       *wentry
}

func newEntryCursor(points *btree.BTreeG[*wentry], r kv.KeyRange, reverse bool) *entryCursor {
	c := &entryCursor{r: r, reverse: reverse}
	if points == nil || points.Len() == 0 {
		return c
	}
	c.it, c.live = points.Iter(), true
	if reverse {
		if c.it.Seek(&wentry{key: r.End}) {
			c.ok = c.it.Prev()
		} else {
			c.ok = c.it.Last()
		}
	} else {
		c.ok = c.it.Seek(&wentry{key: r.Begin})
	}
	c.load()
	return c
}

func (c *entryCursor) load() {
	if !c.ok {
		return
	}
	c.e = c.it.Item()
	if c.reverse {
		c.ok = bytes.Compare(c.e.key, c.r.Begin) >= 0
	} else {
		c.ok = bytes.Compare(c.e.key, c.r.End) < 0
	}
}

func (c *entryCursor) advance() {
	if c.reverse {
		c.ok = c.it.Prev()
	} else {
		c.ok = c.it.Next()
	}
	c.load()
}

func (c *entryCursor) release() {
	if c.live {
		c.it.Release()
	}
}
