package quick

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// Lease operations on a job of the zones layout (Lease.zl set): the same
// semantics as lease.go's for schema 1, on keys that hold the whole job.
// A per-job lease is the job key moved to its deadline with the lease's
// token in its value; a short lease (zl.ptr set, short-job mode) is a job
// key that did not move, protected by its holder's lease on the lane.
//
// Every operation reads the job key serializably (a claim or ack that moves
// it meanwhile makes the commit fail) and checks the token; a short lease
// also reads its lane state serializably (checkHold): a takeover changes
// the lane's token, so a stale holder changes nothing.
//
// Mutations, per job:
//
//	complete            1 clear (the job key); + Z (3, id)/Z (4, id) when the job has blobs, and
//	                    the unique key, outcome and lookup index only when the job has them
//	extend, checkpoint  clear + set of the job key (+ Z (4, id) for a checkpoint over InlinePayload)
//	fail/snooze/release clear + set of the job key (and the lane's pointer when it must move earlier)
//	dead letter         zdead.go

// Short reports whether l is a short-job lease: its job did not move when
// it was handed out, and only its holder's lane lease protects it. Extend
// (or HandBack) moves it to a lease of its own.
func (l Lease) Short() bool { return l.zl != nil && l.zl.ptr != nil }

// key is where a zones lease says its job is.
func (zl *zoneLease) key(id ID) []byte { return zl.lane.jobKey(zl.vestMs, id) }

// zleaseLost is a lost zones lease.
func zleaseLost(id ID, reason string) error { return &LeaseLostError{ID: id, Reason: reason} }

// zlaneLost is a short lease lost with its lane: the error is a
// *LeaseLostError (reason "lane") that also wraps ErrPointerLost.
func zlaneLost(id ID, laneErr error) error {
	return fmt.Errorf("%w: %w", &LeaseLostError{ID: id, Reason: "lane"}, laneErr)
}

// zholds reads the lane states of short leases, once per lane and lease
// token in a transaction, serializably: a takeover of the lane (a new
// token) between the read and the commit makes the commit fail.
type zholds struct {
	byPtr map[*PointerLease]*zhold // the leases of one hand-out share theirs
	byKey map[holdID]*zhold
}

// holdID names a lane lease: its lane state key and token.
type holdID struct {
	state string
	token uint64
}

type zhold struct {
	f    kv.Future[[]byte]
	done bool
	s    laneState
	err  error
}

// read issues the lane-state read of p unless one is issued already.
func (h *zholds) read(tr kv.Transaction, p *PointerLease) {
	if _, ok := h.byPtr[p]; ok {
		return
	}
	if h.byPtr == nil {
		h.byPtr, h.byKey = map[*PointerLease]*zhold{}, map[holdID]*zhold{}
	}
	key := p.lane.stateKey()
	id := holdID{state: string(key), token: p.token}
	z, ok := h.byKey[id]
	if !ok {
		z = &zhold{f: leaseRead(tr).Get(key)}
		h.byKey[id] = z
	}
	h.byPtr[p] = z
}

// check (after read of p or of a copy of it) returns nil when p still holds its lane (a lease that lapsed but
// was not taken over still holds), an error wrapping ErrPointerLost when
// not, or the read's error.
func (h *zholds) check(p *PointerLease) error {
	_, err := h.state(p)
	return err
}

// state is check that also returns the lane state read.
func (h *zholds) state(p *PointerLease) (laneState, error) {
	z, ok := h.byPtr[p]
	if !ok {
		// Another copy of a lane lease read already (read was called
		// with one of them).
		z = h.byKey[holdID{state: string(p.lane.stateKey()), token: p.token}]
		h.byPtr[p] = z
	}
	if z.done {
		return z.s, z.err
	}
	z.done = true
	v, err := z.f.Get()
	if err != nil {
		z.err = err
		return laneState{}, err
	}
	if v == nil || z.s.unmarshal(v) != nil || z.s.Token != p.token {
		z.err = fmt.Errorf("%w: %s", ErrPointerLost, p.lane)
	}
	return z.s, z.err
}

// zheld checks that a zones lease still holds its job: for a short lease
// its lane first, then that the job key is where the lease says with the
// lease's token. f is the serializable read of the job key. It returns the
// stored value.
func (q *Queue) zheld(h *zholds, f kv.Future[[]byte], l Lease) (zjobValue, error) {
	if p := l.zl.ptr; p != nil {
		if err := h.check(p); err != nil {
			if IsPointerLost(err) {
				return zjobValue{}, zlaneLost(l.ID, err)
			}
			return zjobValue{}, err
		}
	}
	v, err := f.Get()
	if err != nil {
		return zjobValue{}, err
	}
	if v == nil {
		// Claimed by another, moved by an extension, acked or cancelled.
		return zjobValue{}, zleaseLost(l.ID, "moved")
	}
	var zv zjobValue
	if err := zv.unmarshal(v); err != nil {
		return zjobValue{}, fmt.Errorf("quick: job %s: %w", l.ID, err)
	}
	// A key where the lease says may still be another lease's: a lease
	// that lapsed, was claimed at exactly its deadline and released leaves
	// an identical key. Only the token tells them apart.
	if zv.Token != l.zl.v.Token && !mutant.On("quick.token") {
		return zjobValue{}, zleaseLost(l.ID, "token")
	}
	return zv, nil
}

// zackTx applies acks of zones leases in tr; prevApplied as in ackTx.
//
// Keys: reads each job key (serializable) and, for short leases, each
// lane's state once (serializable); for a lease found lost after an attempt
// that may have committed, the record S (1, "j", id) (snapshot) and the key
// the ack planned. Writes: see the top of this file.
func (q *Queue) zackTx(tr kv.Transaction, acks []plannedAck, prevApplied []bool) ([]AckResult, error) {
	var holds zholds
	for _, a := range acks {
		if p := a.Lease.zl.ptr; p != nil {
			holds.read(tr, p)
		}
	}
	keys := make([]kv.Future[[]byte], len(acks))
	for i, a := range acks {
		keys[i] = leaseRead(tr).Get(a.Lease.zl.key(a.Lease.ID))
	}
	recs := make([]kv.Future[[]byte], len(acks))
	for i, a := range acks {
		if prevApplied != nil && prevApplied[i] {
			recs[i] = tr.Snapshot().Get(q.k.jobKey(a.Lease.ID))
		}
	}
	var c coverer
	out := make([]AckResult, len(acks))
	for i, a := range acks {
		v, err := q.zheld(&holds, keys[i], a.Lease)
		if err != nil {
			if !IsLeaseLost(err) {
				return nil, err
			}
			out[i].Err = err
			if prevApplied != nil && prevApplied[i] {
				res, ok, err := q.zackApplied(tr, a, keys[i], recs[i])
				if err != nil {
					return nil, err
				}
				if ok {
					out[i] = res
				}
			}
			continue
		}
		res, err := q.zapply(tr, a, v, &c)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	if err := q.applyCover(tr, &c, acks[0].now.UnixMilli()); err != nil {
		return nil, err
	}
	return out, nil
}

// zapply carries out one ack of a held zones lease whose stored value is v.
// Moved jobs are added to c: their lanes are covered once per transaction.
func (q *Queue) zapply(tr kv.Transaction, a plannedAck, v zjobValue, c *coverer) (AckResult, error) {
	l, zl := a.Lease, a.Lease.zl
	key := zl.key(l.ID)
	short := zl.ptr != nil
	orig := v
	if short {
		// A short run's attempt was not written when it was handed out.
		v.Attempt++
	}
	errText := truncate(a.Error, maxErrorLen)
	switch a.Kind {
	case AckComplete:
		q.zcompleteTx(tr, zl.lane, key, l.ID, v)
		return AckResult{}, nil
	case AckDeadLetter:
		return AckResult{Dead: true}, q.zoneDeadLetterTx(tr, a.now, zl.lane, key, zl.jobKey(l.ID), v, errText)
	case AckFail:
		if v.exhausted() {
			return AckResult{Dead: true}, q.zoneDeadLetterTx(tr, a.now, zl.lane, key, zl.jobKey(l.ID), v, errText)
		}
		v.LastError = errText
	case AckSnooze, AckRelease:
		// Not a failure: the run gives its attempt back.
		v.Attempt = max(v.Attempt-1, 0)
	}
	v.Token, v.Holder, v.LeasedAtMs = 0, "", 0
	runMs := a.runAt.UnixMilli()
	nv := v.marshal()
	if runMs == zl.vestMs && bytes.Equal(nv, orig.marshal()) {
		// A short job released where it is: nothing changes (and a retry
		// after an unknown commit writes nothing).
		return AckResult{RunAt: time.UnixMilli(runMs)}, nil
	}
	tr.Clear(key)
	tr.Set(zl.lane.jobKey(runMs, l.ID), nv)
	q.indexSet(tr, zl.lane, runMs, l.ID, v.Flags)
	// The new vesting time may be earlier than the lane's pointer.
	c.add(zl.lane, runMs)
	return AckResult{RunAt: time.UnixMilli(runMs)}, nil
}

// jobKey is the parsed form of the lease's job key.
func (zl *zoneLease) jobKey(id ID) zjobKey {
	return zjobKey{Priority: zl.lane.prio, Lane: zl.lane.lane, VestMs: zl.vestMs, ID: id}
}

// zcompleteTx deletes a finished job: one clear, plus the keys the job has.
func (q *Queue) zcompleteTx(tr kv.Transaction, l laneRef, key []byte, id ID, v zjobValue) {
	q.recordOutcome(tr, id, v.Flags, OutcomeCompleted, v.Attempt, "")
	tr.Clear(key)
	if v.Flags&flagBlob != 0 {
		tr.Clear(l.z.blobKey(id))
	}
	if v.Flags&flagCkptBlob != 0 {
		tr.Clear(l.z.ckptKey(id))
	}
	if v.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(l.z.taskType, v.UniqueKey))
	}
	q.indexClear(tr, id, v.Flags)
}

// zackApplied tells whether an earlier attempt of this ack committed: the
// outcome it planned is in the database. keyF is the read of the lease's
// job key, recF of the record S (1, "j", id).
func (q *Queue) zackApplied(tr kv.Transaction, a plannedAck, keyF, recF kv.Future[[]byte]) (AckResult, bool, error) {
	rv, err := recF.Get()
	if err != nil {
		return AckResult{}, false, err
	}
	var rec record
	dead := rv != nil && rec.unmarshal(rv) == nil && rec.State == stateDead && rec.DeadAtMs == a.now.UnixMilli()
	switch {
	case dead:
		return AckResult{Dead: true}, true, nil
	case a.Kind == AckComplete:
		// The earlier attempt held the job and cleared its key: a key
		// still there was not cleared (another lease holds it).
		kv, err := keyF.Get()
		return AckResult{}, err == nil && kv == nil, err
	case a.Kind == AckDeadLetter:
		return AckResult{}, false, nil
	}
	runMs := a.runAt.UnixMilli()
	v, err := tr.Get(a.Lease.zl.lane.jobKey(runMs, a.Lease.ID)).Get()
	if err != nil || v == nil {
		return AckResult{}, false, err
	}
	return AckResult{RunAt: time.UnixMilli(runMs)}, true, nil
}

// zackCost bounds the mutation bytes of one ack of a zones lease (ackCost):
// the keys it clears and sets and, for an ack that rewrites the job (its
// value holds the payload and checkpoint inline) or makes a dead-letter
// record, the job's bytes.
func zackCost(a plannedAck) int {
	n := 256 + 8*(len(a.Lease.zl.lane.z.space.Bytes())+48)
	if a.Kind == AckComplete {
		return n
	}
	zl := a.Lease.zl
	return n + len(a.Lease.Payload) + len(a.Lease.Checkpoint) + len(a.Lease.ItemSpace) + len(a.Lease.TaskType) +
		len(zl.v.UniqueKey) + len(a.Lease.LastError) + min(len(a.Error), maxErrorLen) + len(zl.v.Holder)
}

// ackMixed applies a batch that holds leases of both layouts: each part
// by its own code, in the same transaction.
func (q *Queue) ackMixed(tr kv.Transaction, acks []plannedAck, prevApplied []bool) ([]AckResult, error) {
	var zi, si []int
	for i, a := range acks {
		if a.Lease.zl != nil {
			zi = append(zi, i)
		} else {
			si = append(si, i)
		}
	}
	out := make([]AckResult, len(acks))
	run := func(idx []int, f func(kv.Transaction, []plannedAck, []bool) ([]AckResult, error)) error {
		if len(idx) == 0 {
			return nil
		}
		part := make([]plannedAck, len(idx))
		var prev []bool
		if prevApplied != nil {
			prev = make([]bool, len(idx))
		}
		for j, i := range idx {
			part[j] = acks[i]
			if prev != nil {
				prev[j] = prevApplied[i]
			}
		}
		res, err := f(tr, part, prev)
		if err != nil {
			return err
		}
		for j, i := range idx {
			out[i] = res[j]
		}
		return nil
	}
	if err := run(zi, q.zackTx); err != nil {
		return nil, err
	}
	if err := run(si, q.ackTx); err != nil {
		return nil, err
	}
	return out, nil
}

// hasZones reports whether any ack is of a zones lease.
func hasZones(acks []plannedAck) bool {
	for _, a := range acks {
		if a.Lease.zl != nil {
			return true
		}
	}
	return false
}

// extendMixed is ExtendMany for a list that holds zones leases: they are
// extended by zextendMany, the others by ExtendMany.
func (q *Queue) extendMixed(ctx context.Context, ls []Lease, d time.Duration) ([]Lease, []error, error) {
	var zi, si []int
	for i, l := range ls {
		if l.zl != nil {
			zi = append(zi, i)
		} else {
			si = append(si, i)
		}
	}
	out := make([]Lease, len(ls))
	errs := make([]error, len(ls))
	run := func(idx []int, f func(context.Context, []Lease, time.Duration) ([]Lease, []error, error)) error {
		if len(idx) == 0 {
			return nil
		}
		part := make([]Lease, len(idx))
		for j, i := range idx {
			part[j] = ls[i]
		}
		res, es, err := f(ctx, part, d)
		if err != nil {
			return err
		}
		for j, i := range idx {
			out[i], errs[i] = res[j], es[j]
		}
		return nil
	}
	if err := run(zi, q.zextendMany); err != nil {
		return nil, nil, err
	}
	if err := run(si, q.ExtendMany); err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// hasZoneLeases reports whether any lease is of the zones layout.
func hasZoneLeases(ls []Lease) bool {
	for _, l := range ls {
		if l.zl != nil {
			return true
		}
	}
	return false
}

// zextendMany renews zones leases until now + d, in transactions of at
// most extendBatch leases and about 1 MB (zmoveSplit). A per-job lease's key moves to the new deadline with its
// token; a short lease becomes a per-job lease there (a fresh token, the
// run's attempt written, its holder and lease time), so a job that outlives
// its lane lease keeps running without a gap. Tokens are fixed before the
// retry loop, so a retry after an unknown commit finds its own move.
//
// Keys: per lease, reads the job key (serializable) and, for short leases,
// the lane state once per lane (serializable); clears the job key and sets
// it at the new deadline (and the lookup index of a trackable job).
func (q *Queue) zextendMany(ctx context.Context, ls []Lease, d time.Duration) ([]Lease, []error, error) {
	if err := q.checkLease(d); err != nil {
		return nil, nil, err
	}
	now := q.Now()
	deadlineMs := now.Add(d).UnixMilli()
	out := make([]Lease, len(ls))
	errs := make([]error, len(ls))
	applied := make([]bool, len(ls))
	toks := zleaseTokens(ls)
	for start, end := 0, 0; start < len(ls); start = end {
		end = zmoveSplit(len(ls), func(i int) Lease { return ls[i] }, start)
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			batch := ls[start:end]
			var holds zholds
			for _, l := range batch {
				if l.zl.ptr != nil {
					holds.read(tr, l.zl.ptr)
				}
			}
			fs := make([]kv.Future[[]byte], len(batch))
			for i, l := range batch {
				fs[i] = leaseRead(tr).Get(l.zl.key(l.ID))
			}
			for i, l := range batch {
				j := start + i
				v, err := q.zheld(&holds, fs[i], l)
				if err != nil {
					if !IsLeaseLost(err) {
						return err
					}
					out[j], errs[j] = l, err
					if maybeCommitted && applied[j] {
						moved, ok, err := q.zmovedTo(tr, l, deadlineMs, toks[j])
						if err != nil {
							return err
						}
						if ok {
							out[j], errs[j] = moved, nil
						}
					}
					continue
				}
				out[j], errs[j] = q.zmoveTx(tr, l, v, now, deadlineMs, toks[j], false), nil
				applied[j] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("quick: extend: %w", err)
		}
	}
	return out, errs, nil
}

// zmoveSplit returns the end of the batch of moves that starts at start,
// of n leases (lease(i) is the i-th): at most extendBatch leases and about
// ackBatchBytes of mutations. A move rewrites the job's value, which holds
// its payload and checkpoint inline (up to InlinePayload each), its last
// error (up to 2,000 bytes) and unique key: up to about 5 kB, so 500 of
// them could pass FDB's advised 1 MB. The first lease always goes.
func zmoveSplit(n int, lease func(i int) Lease, start int) int {
	end, size := start, 0
	for end < n && end-start < extendBatch {
		c := zmoveCost(lease(end))
		if end > start && size+c > ackBatchBytes {
			break
		}
		size += c
		end++
	}
	return end
}

// zmoveCost bounds the mutation bytes of moving one zones job: the cleared
// and set keys and the value as the lease last saw it.
func zmoveCost(l Lease) int {
	if l.zl == nil {
		return 256
	}
	v := &l.zl.v
	return 256 + 2*(len(l.zl.lane.z.space.Bytes())+48) + len(v.Payload) + len(v.Checkpoint) + len(v.LastError) +
		len(v.UniqueKey) + len(v.Holder)
}

// zleaseTokens returns the token each lease has after a renewal: its own
// for a per-job lease, its run token for a short lease (promoted).
func zleaseTokens(ls []Lease) []uint64 {
	toks := make([]uint64, len(ls))
	for i, l := range ls {
		toks[i] = l.token()
	}
	return toks
}

// token is a lease's token, as internal/leasetoken reports it: for a short
// lease, a run token made from its lane lease's token and its job's ID,
// which a promotion (Extend, Checkpoint, HandBack) writes as the per-job
// lease's token. A run so keeps one token from hand-out to its end, as a
// per-job lease keeps its claim's through renewals (the worker names runs
// by it), and a retried promotion finds the token it planned. Lane lease
// tokens are random, so run tokens of different hand-outs differ.
func (l Lease) token() uint64 {
	switch {
	case l.zl == nil:
		return l.sv.Token
	case l.zl.ptr == nil:
		return l.zl.v.Token
	}
	var b [8 + len(ID{})]byte
	binary.LittleEndian.PutUint64(b[:8], l.zl.ptr.token)
	copy(b[8:], l.ID[:])
	if t := xxh3.Hash(b[:]); t != 0 {
		return t
	}
	return 1
}

// zmoveTx moves a held job's key to deadlineMs with token tok and returns
// the lease as it stands. v is the stored value; a short lease is promoted
// to a per-job lease (the run's attempt is written). changed says v differs
// from what is stored, so it is written even where the key stays.
func (q *Queue) zmoveTx(tr kv.Transaction, l Lease, v zjobValue, now time.Time, deadlineMs int64, tok uint64, changed bool) Lease {
	zl := l.zl
	if zl.ptr != nil {
		v.Attempt++
		v.Holder = l.Holder
		v.LeasedAtMs = now.UnixMilli()
	}
	v.Token = tok
	key := zl.key(l.ID)
	newKey := zl.lane.jobKey(deadlineMs, l.ID)
	if changed || zl.ptr != nil || !bytes.Equal(key, newKey) {
		// Moving a key later needs no cover: its pointer vests early
		// and the claim that finds nothing vested pushes it on.
		tr.Clear(key)
		tr.Set(newKey, v.marshal())
		q.indexSet(tr, zl.lane, deadlineMs, l.ID, v.Flags)
	}
	return zleaseAt(l, v, deadlineMs)
}

// zleaseAt is l as a per-job lease whose key is at deadlineMs with value v.
func zleaseAt(l Lease, v zjobValue, deadlineMs int64) Lease {
	l.zl = &zoneLease{lane: l.zl.lane, vestMs: deadlineMs, v: v}
	l.Attempt = int(v.Attempt)
	l.Deadline = time.UnixMilli(deadlineMs)
	return l
}

// zmovedTo tells whether an earlier attempt moved the lease to deadlineMs:
// the key it planned holds the token it planned (tokens are random and
// fixed before the retry loop, so no other writer put it there).
func (q *Queue) zmovedTo(tr kv.Transaction, l Lease, deadlineMs int64, tok uint64) (Lease, bool, error) {
	v, err := tr.Get(l.zl.lane.jobKey(deadlineMs, l.ID)).Get()
	if err != nil || v == nil {
		return l, false, err
	}
	var zv zjobValue
	if zv.unmarshal(v) != nil || zv.Token != tok {
		return l, false, nil
	}
	return zleaseAt(l, zv, deadlineMs), true, nil
}

// zcheckpoint is Checkpoint for a zones lease: the checkpoint goes inline
// in the job's value when it is at most InlinePayload bytes, else under
// Z (4, id); the key moves to now + d in the same commit (a short lease is
// promoted to a per-job lease, as zextendMany does).
//
// Keys: reads the job key (serializable) and, for a short lease, its lane
// state (serializable); clears the job key and sets it at the new deadline;
// sets or clears Z (4, id).
func (q *Queue) zcheckpoint(ctx context.Context, l Lease, state []byte, d time.Duration) (Lease, error) {
	now := q.Now()
	deadlineMs := now.Add(d).UnixMilli()
	tok := zleaseTokens([]Lease{l})[0]
	applied := false
	var out Lease
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		var holds zholds
		if l.zl.ptr != nil {
			holds.read(tr, l.zl.ptr)
		}
		v, err := q.zheld(&holds, leaseRead(tr).Get(l.zl.key(l.ID)), l)
		if err != nil {
			if maybeCommitted && applied && IsLeaseLost(err) {
				moved, ok, merr := q.zcheckpointed(tr, l, state, deadlineMs, tok)
				if merr != nil {
					return merr
				}
				if ok {
					out = moved
					return nil
				}
			}
			return err
		}
		z := l.zl.lane.z
		blob := len(state) > InlinePayload
		switch {
		case blob:
			tr.Set(z.ckptKey(l.ID), state)
			v.Checkpoint = nil
			v.Flags |= flagCheckpoint | flagCkptBlob
		default:
			if v.Flags&flagCkptBlob != 0 {
				tr.Clear(z.ckptKey(l.ID))
			}
			v.Checkpoint = state
			v.Flags = v.Flags&^flagCkptBlob | flagCheckpoint
		}
		out = q.zmoveTx(tr, l, v, now, deadlineMs, tok, true)
		out.Checkpoint = state
		applied = true
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("quick: checkpoint: %w", err)
	}
	return out, nil
}

// zcheckpointed tells whether an earlier attempt of a checkpoint committed:
// the key it planned holds its token and its checkpoint.
func (q *Queue) zcheckpointed(tr kv.Transaction, l Lease, state []byte, deadlineMs int64, tok uint64) (Lease, bool, error) {
	moved, ok, err := q.zmovedTo(tr, l, deadlineMs, tok)
	if err != nil || !ok {
		return l, false, err
	}
	v := moved.zl.v
	ck := v.Checkpoint
	if v.Flags&flagCkptBlob != 0 {
		if ck, err = tr.Get(l.zl.lane.z.ckptKey(l.ID)).Get(); err != nil {
			return l, false, err
		}
	}
	if !v.hasCheckpoint() || !bytes.Equal(ck, state) {
		return l, false, nil
	}
	moved.Checkpoint = state
	return moved, true, nil
}

// zlostErrors joins lost leases' errors, each with its index; nil if none.
func zlostErrors(what string, errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("quick: %s %d: %w", what, i, err))
		}
	}
	return errors.Join(out...)
}
