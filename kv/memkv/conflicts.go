package memkv

import (
	"bytes"
)

// conflictHistory is the resolver's memory of recent writes: for every key,
// the version of the last committed transaction that wrote it (0 when none is
// remembered). It answers the one question a commit asks, "did any
// transaction that committed after version rv write into [b, e)?", in
// O(log n).
//
// The map is a step function held in a treap keyed by the key where each step
// begins; every node also carries the maximum version in its subtree, so a
// range query skips any subtree whose writes are all at or before rv. Since
// commit versions only grow, recording a write of [b, e) at version v simply
// overwrites the steps inside [b, e) with v: the newest write is also the
// largest version, which is all the query needs. This is the role FDB's
// ConflictSet (a skip list with per-level maximum versions) plays.
//
// Entries older than the MVCC window are useless, because a transaction that
// old fails with 1007 before its conflicts are checked; prune folds them
// into 0 so the structure stays proportional to recent writes.
type conflictHistory struct {
	root *cnode
	size int
	rnd  uint64
}

type cnode struct {
	key         []byte
	ver         int64 // version of the keys from key up to the next node
	max         int64 // largest ver in this subtree
	prio        uint64
	left, right *cnode
}

// next returns a pseudo-random treap priority (splitmix64).
func (h *conflictHistory) next() uint64 {
	h.rnd += 0x9e3779b97f4a7c15
	z := h.rnd
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (n *cnode) update() {
	m := n.ver
	if n.left != nil && n.left.max > m {
		m = n.left.max
	}
	if n.right != nil && n.right.max > m {
		m = n.right.max
	}
	n.max = m
}

// split divides t into the nodes with keys before k and those from k on.
func split(t *cnode, k []byte) (*cnode, *cnode) {
	if t == nil {
		return nil, nil
	}
	if bytes.Compare(t.key, k) < 0 {
		l, r := split(t.right, k)
		t.right = l
		t.update()
		return t, r
	}
	l, r := split(t.left, k)
	t.left = r
	t.update()
	return l, t
}

// merge joins two treaps where every key of a precedes every key of b.
func merge(a, b *cnode) *cnode {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.prio > b.prio {
		a.right = merge(a.right, b)
		a.update()
		return a
	}
	b.left = merge(a, b.left)
	b.update()
	return b
}

func count(t *cnode) int {
	if t == nil {
		return 0
	}
	return 1 + count(t.left) + count(t.right)
}

func lastNode(t *cnode) *cnode {
	for t != nil && t.right != nil {
		t = t.right
	}
	return t
}

func firstNode(t *cnode) *cnode {
	for t != nil && t.left != nil {
		t = t.left
	}
	return t
}

// record notes that [b, e) was written at version v, which must be at least
// every version recorded before.
func (h *conflictHistory) record(b, e []byte, v int64) {
	if bytes.Compare(b, e) >= 0 {
		return
	}
	left, rest := split(h.root, b)
	mid, right := split(rest, e)
	// The keys from e on keep the version they had; that needs a step at e
	// unless one is already there.
	var tail *cnode
	if f := firstNode(right); f == nil || !bytes.Equal(f.key, e) {
		prev := lastNode(mid)
		if prev == nil {
			prev = lastNode(left)
		}
		var endVer int64
		if prev != nil {
			endVer = prev.ver
		}
		tail = &cnode{key: e, ver: endVer, max: endVer, prio: h.next()}
		h.size++
	}
	h.size -= count(mid)
	n := &cnode{key: b, ver: v, max: v, prio: h.next()}
	h.size++
	h.root = merge(merge(left, merge(n, tail)), right)
}

// writtenAfter reports whether a write into [b, e) was recorded with a
// version greater than rv.
func (h *conflictHistory) writtenAfter(b, e []byte, rv int64) bool {
	if h.root == nil || h.root.max <= rv || bytes.Compare(b, e) >= 0 {
		return false
	}
	// The step in force at b starts at or before it.
	var floor *cnode
	for t := h.root; t != nil; {
		if bytes.Compare(t.key, b) <= 0 {
			floor = t
			t = t.right
		} else {
			t = t.left
		}
	}
	if floor != nil && floor.ver > rv {
		return true
	}
	return anyBetween(h.root, b, e, rv)
}

// anyBetween reports whether a node with b < key < e has ver > rv.
func anyBetween(t *cnode, b, e []byte, rv int64) bool {
	for t != nil {
		if t.max <= rv {
			return false
		}
		switch {
		case bytes.Compare(t.key, b) <= 0:
			t = t.right
		case bytes.Compare(t.key, e) >= 0:
			t = t.left
		default:
			// t splits the interval: its left subtree holds the part after b,
			// its right subtree the part before e.
			return t.ver > rv || anyAfter(t.left, b, rv) || anyBefore(t.right, e, rv)
		}
	}
	return false
}

// anyAfter reports whether a node with key > b has ver > rv.
func anyAfter(t *cnode, b []byte, rv int64) bool {
	for t != nil && t.max > rv {
		if bytes.Compare(t.key, b) > 0 {
			if t.ver > rv || (t.right != nil && t.right.max > rv) {
				return true
			}
			t = t.left
		} else {
			t = t.right
		}
	}
	return false
}

// anyBefore reports whether a node with key < e has ver > rv.
func anyBefore(t *cnode, e []byte, rv int64) bool {
	for t != nil && t.max > rv {
		if bytes.Compare(t.key, e) < 0 {
			if t.ver > rv || (t.left != nil && t.left.max > rv) {
				return true
			}
			t = t.right
		} else {
			t = t.left
		}
	}
	return false
}

// prune forgets versions at or before oldest, which no admissible commit can
// conflict with, and merges the steps that become equal. It rebuilds the
// treap in O(n) from the in-order node list.
func (h *conflictHistory) prune(oldest int64) {
	nodes := make([]*cnode, 0, h.size)
	var walk func(*cnode)
	walk = func(t *cnode) {
		if t == nil {
			return
		}
		walk(t.left)
		nodes = append(nodes, t)
		walk(t.right)
	}
	walk(h.root)
	kept := nodes[:0]
	var prev int64 // the step before the first node is 0
	for _, n := range nodes {
		if n.ver <= oldest {
			n.ver = 0
		}
		if n.ver == prev {
			continue
		}
		prev = n.ver
		kept = append(kept, n)
	}
	// Cartesian-tree construction with fresh priorities keeps the treap's
	// expected balance.
	var stack []*cnode
	for _, n := range kept {
		n.left, n.right = nil, nil
		n.prio = h.next()
		var last *cnode
		for len(stack) > 0 && stack[len(stack)-1].prio < n.prio {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		n.left = last
		if len(stack) > 0 {
			stack[len(stack)-1].right = n
		}
		stack = append(stack, n)
	}
	h.root = nil
	if len(stack) > 0 {
		h.root = stack[0]
	}
	var fix func(*cnode)
	fix = func(t *cnode) {
		if t == nil {
			return
		}
		fix(t.left)
		fix(t.right)
		t.update()
	}
	fix(h.root)
	h.size = len(kept)
}
