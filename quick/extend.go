package quick

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/quickfdb/quickfdb/kv"
)

// Renewals of zones leases: Extend and Checkpoint move the job key later;
// a short lease is promoted to a per-job lease on the way.

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
			var sm slotMoves // tenant concurrency slots (limitgate.go)
			sm.read(q, tr, batch)
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
				if err := sm.moved(q, tr, i, l, deadlineMs); err != nil {
					return err
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
		return 0
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
	l.zl = &zoneLease{lane: l.zl.lane, vestMs: deadlineMs, v: v, slot: l.zl.slot && l.zl.ptr == nil}
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
		var sm slotMoves // tenant concurrency slots (limitgate.go)
		jf := leaseRead(tr).Get(l.zl.key(l.ID))
		sm.read(q, tr, []Lease{l})
		v, err := q.zheld(&holds, jf, l)
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
		if err := sm.moved(q, tr, 0, l, deadlineMs); err != nil {
			return err
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
