package memkv

import (
	"bytes"
	"sync"

	"github.com/tidwall/btree"
)

// item is one stored key and its value. Stored slices are never modified:
// writes copy their input, reads copy their output.
type item struct {
	key, val []byte
}

func itemLess(a, b item) bool { return bytes.Compare(a.key, b.key) < 0 }

type tree = btree.BTreeG[item]

// newTree makes an unlocked B-tree: the master tree is only written under the
// commit lock and published snapshots are never written at all, so the
// B-tree's own lock would be pure overhead.
func newTree() *tree {
	return btree.NewBTreeGOptions(itemLess, btree.Options{NoLocks: true, Degree: 16})
}

// readView is what a read version gives a transaction: the version and the
// immutable snapshot of the data as of that version.
type readView struct {
	version int64
	tree    *tree
}

func (v readView) get(k []byte) ([]byte, bool) {
	it, ok := v.tree.Get(item{key: k})
	return it.val, ok
}

// store holds the versioned data.
//
// The master tree is the newest data; only a commit (under commitMu) writes
// it. After each commit its Copy() is published as the snapshot of the new
// version. tidwall/btree's Copy is copy-on-write, so it costs O(1) and the
// next commit clones only the nodes it touches; older snapshots stay intact
// for the transactions still reading them and are freed by the garbage
// collector when the last of those lets go. Reads never lock the data.
//
// Versions are handed out under verMu: a read version is the latest committed
// version, advanced to the engine clock's pace (as FDB's proxies do even when
// idle); a commit version exceeds every version handed out before it.
type store struct {
	commitMu sync.Mutex
	master   *tree
	// The commit queue (DB.commit): commits wait in queue while one of
	// them, the combiner, resolves and applies the whole queue at once.
	queueMu   sync.Mutex
	queue     []*queuedCommit
	combining bool
	hist      conflictHistory
	lastPrune int64 // version at the last history prune
	prunedLen int   // history size just after it

	verMu   sync.Mutex
	issued  int64    // highest version handed out, read or commit
	pending int64    // commit version reserved but not yet published, or 0
	cur     readView // latest published version
}

func newStore(initial int64) *store {
	s := &store{master: newTree(), issued: initial}
	s.cur = readView{version: initial, tree: s.master.Copy()}
	return s
}

// readVersion returns a read version and its snapshot. clockVersion is the
// engine clock's version now.
func (s *store) readVersion(clockVersion int64) readView {
	s.verMu.Lock()
	defer s.verMu.Unlock()
	if s.pending != 0 {
		// A commit holds a version it has not published yet: read just below
		// it, where the published snapshot is exact.
		return readView{version: s.pending - 1, tree: s.cur.tree}
	}
	v := max(s.issued, clockVersion)
	s.issued = v
	return readView{version: v, tree: s.cur.tree}
}

// reserve picks the commit version of the commit holding commitMu: above
// every version handed out, and no slower than the clock. In a batch of
// commits published together (DB.commit) pending stays the batch's first
// version: reads meanwhile get the version just below it, where the
// published snapshot is still exact.
func (s *store) reserve(clockVersion int64) int64 {
	s.verMu.Lock()
	defer s.verMu.Unlock()
	cv := max(s.issued+1, clockVersion)
	s.issued = cv
	if s.pending == 0 {
		s.pending = cv
	}
	return cv
}

// publish makes the master tree's state visible as version cv.
func (s *store) publish(cv int64) {
	snap := s.master.Copy()
	s.verMu.Lock()
	s.cur = readView{version: cv, tree: snap}
	s.pending = 0
	s.verMu.Unlock()
}

// latest returns the newest published version.
func (s *store) latest() readView {
	s.verMu.Lock()
	defer s.verMu.Unlock()
	return s.cur
}
