package memkv

import (
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/tidwall/btree"
)

// commitRequest is what a transaction sends the resolver: FDB's
// CommitTransactionRequest. Its slices are never modified after it is built.
type commitRequest struct {
	rv      int64
	reads   []kv.KeyRange // coalesced read-conflict ranges
	writes  []kv.KeyRange // coalesced write-conflict ranges
	clears  []kv.KeyRange // cleared ranges, applied first
	points  []*wentry     // point entries, in key order
	stamped []stampedKey
	watches []*watch

	stampedKeys [][]byte // stamped's final keys, set by commitLocked
}

// size is the figure FDB's Transaction::getSize compares with the 10 MB
// limit: the coalesced mutations' keys and parameters plus the coalesced
// conflict ranges' bounds.
func (r *commitRequest) size() int64 {
	var n int64
	for _, c := range r.clears {
		n += int64(len(c.Begin) + len(c.End))
	}
	for _, e := range r.points {
		for _, o := range e.ops {
			if o.kind == opClear {
				n += int64(2*len(e.key) + 1) // a single-key clear range
			} else {
				n += int64(len(e.key) + len(o.param))
			}
		}
	}
	for _, s := range r.stamped {
		n += int64(len(s.param) + len(s.value))
	}
	for _, rs := range [][]kv.KeyRange{r.reads, r.writes} {
		for _, c := range rs {
			n += int64(len(c.Begin) + len(c.End))
		}
	}
	return n
}

// buildCommitLocked turns the write map into a commit request.
func (t *txn) buildCommitLocked() *commitRequest {
	req := &commitRequest{
		clears:  t.w.cleared.all(),
		stamped: t.w.stamped,
		watches: t.watches,
	}
	writes := make([]kv.KeyRange, 0, len(req.clears)+len(t.w.conflicts))
	writes = append(writes, req.clears...)
	writes = append(writes, t.w.conflicts...)
	if t.w.points != nil {
		req.points = t.w.points.Items()
		for _, e := range req.points {
			writes = append(writes, kv.KeyRange{Begin: e.key, End: keyAfter(e.key)})
		}
	}
	req.writes = coalesce(writes)
	req.reads = coalesce(append([]kv.KeyRange(nil), t.reads...))
	return req
}

// Commit commits the transaction, following RYW's and the native client's
// commit: a deferred error or an earlier commit ends it at once; a read-only
// transaction commits without the resolver (GetCommittedVersion -1, watches
// armed at its read version); a transaction over the size limit fails with
// 2101 without being sent.
//
// With commit latency, the commit is in flight from the moment it is sent
// until the reply arrives, and the resolver applies it atomically half-way.
// A cancellation or timeout that strikes in flight is returned with
// DuringCommit set (kv.IsMaybeCommitted): before the half-way point the
// commit is abandoned, after it the commit took effect. Without injected
// latency nothing can strike in flight, so DuringCommit is never set; a
// timeout or cancel found when Commit starts is returned plainly and nothing
// was applied.
func (t *txn) Commit() error {
	t.mu.Lock()
	if t.deferred != nil {
		err := t.deferred
		t.mu.Unlock()
		return err
	}
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		t.mu.Unlock()
		return errUsedDuringCommit
	}
	t.checkDeadlineLocked()
	if err := t.g.failure(); err != nil {
		t.mu.Unlock()
		return err
	}
	t.commitStarted = true
	g, stamp := t.g, t.stamp

	if t.w.readOnly() {
		t.committed = -1
		stamp.reject(errNoCommitVersion)
		watches := t.watches
		t.watches = nil
		t.mu.Unlock()
		t.db.stats.readOnly.Add(1)
		t.db.armWatches(watches)
		return nil
	}

	req := t.buildCommitLocked()
	t.watches = nil
	if req.size() > kv.MaxTransactionSize {
		failCommit(req, stamp, errTooLarge)
		t.mu.Unlock()
		return errTooLarge
	}
	// A transaction that never read takes its read version now.
	grvAt := t.takeReadVersionLocked()
	req.rv = t.rv.version
	t.mu.Unlock()

	lat := t.db.delay(t.db.opts.Latency.Commit)
	var sent time.Time
	if !grvAt.IsZero() || lat > 0 {
		sent = t.db.opts.Wait.Now()
		if grvAt.After(sent) {
			sent = grvAt
		}
	}
	if err := t.inFlight(g, sent, lat/2); err != nil {
		// Abandoned before it reached the resolver.
		failCommit(req, stamp, duringCommit(err))
		return duringCommit(err)
	}

	cv, vs, err := t.db.commit(req)
	if err != nil {
		failCommit(req, stamp, err)
	} else {
		stamp.resolve(vs)
		t.mu.Lock()
		if t.g == g {
			t.committed = cv
		}
		t.mu.Unlock()
	}

	if lat > 0 {
		if ierr := t.inFlight(g, t.db.opts.Wait.Now(), lat-lat/2); ierr != nil {
			return duringCommit(ierr)
		}
	}
	return err
}

// inFlight waits d after start (both zero: no wait) unless the attempt fails
// first, and reports a failure, including a deadline passed on the engine
// clock meanwhile.
func (t *txn) inFlight(g *gen, start time.Time, d time.Duration) error {
	if start.IsZero() {
		return nil
	}
	if err := waitUntil(t.db.opts.Wait, g, start.Add(d)); err != nil {
		return err
	}
	return t.expire(g)
}

// failCommit settles what waits on a commit that did not happen: its
// watches fail with the commit's error and the versionstamp with 2020
// (transaction_invalid_version), as FDB's commitAndWatch does.
func failCommit(req *commitRequest, stamp *promise[[]byte], err error) {
	for _, w := range req.watches {
		w.finish(err)
	}
	stamp.reject(errInvalidVersion)
}

// queuedCommit is a commit request waiting for the combiner (DB.commit),
// and its outcome once done is closed.
type queuedCommit struct {
	req   *commitRequest
	cv    int64
	stamp []byte
	err   error
	done  chan struct{}
	// lead: done was closed to hand this waiter the combiner's part, not
	// because its commit was resolved.
	lead bool
}

// commit resolves and applies req: the resolver and the storage servers in
// one step (commitLocked). Commits are serialized, as FDB's resolver
// serializes them, but batched as FDB's commit proxies batch them: a commit
// that arrives while another goroutine is resolving joins a queue instead
// of contending for the commit lock, and the next combiner takes the whole
// queue under one acquisition of the lock and publishes one snapshot for
// it. Within a batch the commits are resolved one after the other in
// arrival order, each against the writes of those before it, each with its
// own commit version: the outcome is that of taking the lock once per
// commit in that order. Every commit's caller returns only once its batch
// is published, so a read version taken after Commit returns sees it.
//
// Batching saves what one lock hand-off per commit costs: waking the next
// waiter's thread while the lock sits idle, and a snapshot per commit,
// whose copy-on-write B-tree makes the next commit clone the nodes on its
// paths again (the tree's upper nodes, shared by every path, are cloned
// once per batch instead).
func (db *DB) commit(req *commitRequest) (int64, []byte, error) {
	s := db.store
	me := &queuedCommit{req: req, done: make(chan struct{})}
	s.queueMu.Lock()
	s.queue = append(s.queue, me)
	if s.combining {
		s.queueMu.Unlock()
		<-me.done
		if !me.lead {
			return me.cv, me.stamp, me.err
		}
		s.queueMu.Lock()
	}
	// This goroutine is the combiner: the queue holds its own commit and
	// every one that arrived before it took the queue.
	s.combining = true
	batch := s.queue
	s.queue = nil
	s.queueMu.Unlock()

	s.commitMu.Lock()
	var unpublished int64
	for _, qc := range batch {
		var watched bool
		qc.cv, qc.stamp, watched, qc.err = db.commitLocked(qc.req)
		if qc.err != nil {
			continue
		}
		if !watched {
			unpublished = qc.cv
			continue
		}
		// Watches see each commit's own snapshot: publish first, as an
		// unbatched commit does, then settle them.
		s.publish(qc.cv)
		unpublished = 0
		db.settleWatchesLocked(qc.req, qc.stamp)
	}
	if unpublished != 0 {
		s.publish(unpublished)
	}
	s.commitMu.Unlock()

	// Hand the combiner's part to the first commit that arrived meanwhile.
	s.queueMu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].lead = true
		close(s.queue[0].done)
	} else {
		s.combining = false
	}
	s.queueMu.Unlock()
	for _, qc := range batch {
		if qc != me {
			close(qc.done)
		}
	}
	return me.cv, me.stamp, me.err
}

// commitLocked is one commit under the commit lock: check the MVCC window
// and the read conflicts, pick the commit version, apply the mutations and
// remember the writes for later conflict checks. The caller publishes the
// new snapshot; watched reports that watches must be settled once it has
// (settleWatchesLocked), before any later commit is applied.
func (db *DB) commitLocked(req *commitRequest) (cv int64, stamp []byte, watched bool, err error) {
	s := db.store
	now := db.clockVersion()
	if now-req.rv > db.window {
		db.stats.tooOld.Add(1)
		return 0, nil, false, errTooOld
	}
	for _, r := range req.reads {
		if s.hist.writtenAfter(r.Begin, r.End, req.rv) {
			db.stats.conflicts.Add(1)
			return 0, nil, false, errNotCommitted
		}
	}

	cv = s.reserve(now)
	stamp = versionstamp(cv, 0)
	for _, c := range req.clears {
		s.master.DeleteRange(item{key: c.Begin}, item{key: c.End}, &btree.DeleteRangeOptions{NoReturn: true})
	}
	for _, e := range req.points {
		var old []byte
		var present bool
		if !e.independent() {
			old, present = getItem(s.master, e.key)
		}
		if val, ok := e.apply(old, present, stamp); ok {
			s.master.Set(item{key: e.key, val: val})
		} else {
			s.master.Delete(item{key: e.key})
		}
	}
	req.stampedKeys = make([][]byte, len(req.stamped))
	for i, sk := range req.stamped {
		k := placeStamp(sk.param, sk.pos, stamp)
		req.stampedKeys[i] = k
		s.master.Set(item{key: k, val: sk.value})
	}

	for _, w := range req.writes {
		s.hist.record(w.Begin, w.End, cv)
	}
	// Measured on FDB 7.3 (kvtest versionstamp/key-write-conflict): a
	// versionstamped key conflicts with a transaction that read where it
	// landed, as if written at its final key; the commit proxy adds that
	// write-conflict range once the versionstamp is known.
	for _, k := range req.stampedKeys {
		s.hist.record(k, append(k[:len(k):len(k)], 0), cv)
	}
	if s.hist.size > 2*s.prunedLen+1024 || now-s.lastPrune > db.window/2 {
		s.hist.prune(now - db.window)
		s.prunedLen, s.lastPrune = s.hist.size, now
	}
	db.stats.commits.Add(1)
	return cv, stamp, len(req.watches) > 0 || db.watches.count() > 0, nil
}

// settleWatchesLocked fires the armed watches req's commit changed and arms
// the watches it set, against the data as of that commit.
func (db *DB) settleWatchesLocked(req *commitRequest, stamp []byte) {
	s := db.store
	if db.watches.count() > 0 {
		for _, c := range req.clears {
			db.watches.cleared(c.Begin, c.End)
		}
		for _, e := range req.points {
			v, ok := getItem(s.master, e.key)
			db.watches.changed(e.key, v, ok)
		}
		for _, k := range req.stampedKeys {
			v, ok := getItem(s.master, k)
			db.watches.changed(k, v, ok)
		}
	}
	for _, w := range req.watches {
		v, ok := getItem(s.master, w.key)
		db.watches.arm(w, v, ok)
	}
}

// armWatches arms a read-only commit's watches against the latest data, under
// the commit lock so no commit slips between the comparison and the arming.
func (db *DB) armWatches(ws []*watch) {
	if len(ws) == 0 {
		return
	}
	s := db.store
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	for _, w := range ws {
		v, ok := getItem(s.master, w.key)
		db.watches.arm(w, v, ok)
	}
}

func getItem(t *tree, k []byte) ([]byte, bool) {
	it, ok := t.Get(item{key: k})
	return it.val, ok
}
