package memkv

import (
	"bytes"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Streaming as the Go binding and fdb_c do it: GetRange issues its first batch
// at once in iterator mode; later batches grow (iterator) or take the rest
// (GetSliceWithError: exact mode with a limit, serial mode without). Byte
// targets are fdb_c's; a row costs its key and value plus 8 bytes.
var iteratorBytes = [...]int{4096, 6144, 9216, 13824, 20736, 31104, 46656, 69984, 80000, 120000}

const serialBytes = 80000

func iterationBytes(iteration int) int {
	return iteratorBytes[min(iteration, len(iteratorBytes))-1]
}

// batch is one fetch of a range read.
type batch struct {
	kvs  []kv.KeyValue
	more bool // the fetch stopped at its row or byte limit
}

type rangeResult struct {
	t        *txn
	snapshot bool
	r        kv.KeyRange
	limit    int
	reverse  bool
	first    kv.Future[batch]
}

func (t *txn) getRange(r kv.KeyRange, opts kv.RangeOptions, snapshot bool) kv.RangeResult {
	rr := &rangeResult{t: t, snapshot: snapshot, r: r, limit: opts.Limit, reverse: opts.Reverse}
	rr.first = t.fetch(r, opts.Limit, iterationBytes(1), opts.Reverse, snapshot)
	return rr
}

// rest is the part of r a batch ending at last has not covered.
func rest(r kv.KeyRange, last []byte, reverse bool) kv.KeyRange {
	if reverse {
		return kv.KeyRange{Begin: r.Begin, End: last}
	}
	return kv.KeyRange{Begin: keyAfter(last), End: r.End}
}

// GetSliceWithError reads the whole (limited) range.
func (rr *rangeResult) GetSliceWithError() ([]kv.KeyValue, error) {
	var out []kv.KeyValue
	f, r, remaining := rr.first, rr.r, rr.limit
	for {
		b, err := f.Get()
		if err != nil {
			return nil, err
		}
		out = append(out, b.kvs...)
		if !b.more || len(b.kvs) == 0 || (rr.limit > 0 && len(b.kvs) == remaining) {
			return out, nil
		}
		bytesLimit := 0 // exact mode: the row limit alone
		if rr.limit > 0 {
			remaining -= len(b.kvs)
		} else {
			bytesLimit = serialBytes
		}
		r = rest(r, b.kvs[len(b.kvs)-1].Key, rr.reverse)
		f = rr.t.fetch(r, remaining, bytesLimit, rr.reverse, rr.snapshot)
	}
}

// Iterator streams the range, fetching batches as they are consumed; the
// read conflicts cover what was fetched.
func (rr *rangeResult) Iterator() kv.RangeIterator {
	return &rangeIter{rr: rr, f: rr.first, r: rr.r, remaining: rr.limit, iteration: 1}
}

type rangeIter struct {
	rr        *rangeResult
	f         kv.Future[batch] // next batch, if one is in flight
	r         kv.KeyRange      // what is left to fetch
	kvs       []kv.KeyValue
	idx       int
	more      bool
	remaining int
	iteration int
	done      bool
	err       error
}

// Advance mirrors the Go binding's RangeIterator.Advance.
func (it *rangeIter) Advance() bool {
	if it.done {
		return false
	}
	if it.f == nil {
		return true
	}
	b, err := it.f.Get()
	it.f = nil
	it.kvs, it.more, it.err, it.idx = b.kvs, b.more, err, 0
	if err != nil || len(it.kvs) > 0 {
		return true
	}
	it.done = true
	return false
}

func (it *rangeIter) Get() (kv.KeyValue, error) {
	if it.err != nil {
		// Report the error once; the iteration ends with it.
		it.done = true
		return kv.KeyValue{}, it.err
	}
	if it.idx >= len(it.kvs) {
		return kv.KeyValue{}, errInvalidOperation // Get without Advance
	}
	pair := it.kvs[it.idx]
	it.idx++
	if it.idx == len(it.kvs) {
		it.fetchNext()
	}
	return pair, nil
}

func (it *rangeIter) fetchNext() {
	if !it.more || it.idx == it.remaining {
		it.done = true
		return
	}
	if it.remaining > 0 {
		it.remaining -= it.idx
	}
	it.r = rest(it.r, it.kvs[it.idx-1].Key, it.rr.reverse)
	it.iteration++
	it.f = it.rr.t.fetch(it.r, it.remaining, iterationBytes(it.iteration), it.rr.reverse, it.rr.snapshot)
}

// fetch issues one batch of a range read: at most rowLimit rows (0: no
// limit), stopping once byteLimit bytes are read (0: no limit).
func (t *txn) fetch(r kv.KeyRange, rowLimit, byteLimit int, reverse, snapshot bool) kv.Future[batch] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.readCheckLocked(); err != nil {
		return failed[batch](err)
	}
	if rowLimit < 0 {
		return failed[batch](errRangeLimitsInvalid)
	}
	if bytes.Compare(r.Begin, maxUserKey) > 0 || bytes.Compare(r.End, maxUserKey) > 0 {
		return failed[batch](errOutsideLegalRange)
	}
	if bytes.Compare(r.Begin, r.End) >= 0 {
		return readyFuture[batch]{} // an empty or inverted range reads nothing
	}
	// A range the transaction cleared entirely needs no storage read.
	var view *tree
	var at time.Time
	if !t.w.cleared.covers(r.Begin, r.End) {
		at = t.readAtLocked()
		if t.db.tooOld(t.rv.version) {
			return &timedFuture[batch]{t: t, g: t.g, at: at, err: errTooOld}
		}
		view = t.rv.tree
	}
	b, region, err := t.scanLocked(view, r, rowLimit, byteLimit, reverse)
	if err != nil {
		return failed[batch](err)
	}
	if view != nil && !snapshot {
		t.addReadConflictRangeLocked(region)
	}
	return &timedFuture[batch]{t: t, g: t.g, at: at, val: b}
}
