package quick

import (
	"bytes"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Acks of zones leases (lanelease.go says what each writes).

// zackTx applies acks of zones leases in tr; prevApplied as in ackTx.
//
// Keys: reads each job key (serializable) and, for short leases, each
// lane's state once (serializable); for a fail, snooze or release of a
// short-job task type, the lane's state and hand-out mark (serializable,
// vestAfterHandout); for a lease found lost after an attempt
// that may have committed, the record S (1, "j", id) (snapshot) and the key
// the ack planned; for leases claimed under a tenant's concurrency limit,
// those of slotAcks (limitgate.go). Writes: see the top of this file.
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
	var sa slotAcks // tenant concurrency slots (limitgate.go)
	sa.read(q, tr, acks)
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
		if err := sa.held(q, tr, i, a); err != nil {
			return nil, err
		}
		if !res.RunAt.IsZero() {
			// Where the job went (vestAfterHandout may move it later):
			// a retry after an unknown commit looks for it there.
			acks[i].runAt = res.RunAt
		}
		out[i] = res
	}
	if err := sa.finish(q, tr, acks[0].now.UnixMilli()); err != nil {
		return nil, err
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
	case AckComplete, AckCancel:
		kind, reason := OutcomeCompleted, ""
		if a.Kind == AckCancel {
			kind, reason = OutcomeCancelled, errText
		}
		q.zfinishTx(tr, zl.lane, key, finish{
			id: l.ID, kind: kind, taskType: l.TaskType, itemSpace: l.ItemSpace, prio: zl.lane.prio,
			v: &v, payload: l.Payload, reason: reason, now: a.now,
		})
		return AckResult{}, nil
	case AckDeadLetter:
		return AckResult{Dead: true}, q.zoneDeadLetterTx(tr, a.now, zl.lane, key, zl.jobKey(l.ID), v, errText)
	case AckFail:
		if v.exhausted() {
			return AckResult{Dead: true}, q.zoneDeadLetterTx(tr, a.now, zl.lane, key, zl.jobKey(l.ID), v, errText)
		}
		v.LastError = errText
		q.noteFailure(l.TaskType, &v, a.now, errText)
	case AckSnooze, AckRelease:
		// Not a failure: the run gives its attempt back.
		v.Attempt = max(v.Attempt-1, 0)
	}
	v.Token, v.Holder, v.LeasedAtMs = 0, "", 0
	// Never behind a short-job holder's hand-out mark (issue 22, item 1),
	// the holder's own included: a short job released in place is
	// behind it, so it moves after it.
	runMs, err := q.vestAfterHandout(tr, zl.lane, a.runAt.UnixMilli(), l.ID)
	if err != nil {
		return AckResult{}, err
	}
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

// zfinishTx deletes a completed or cancelled job: one clear, plus the keys
// the job has, and its finished record when it has retention (retainTx).
func (q *Queue) zfinishTx(tr kv.Transaction, l laneRef, key []byte, f finish) {
	id, v := f.id, f.v
	q.recordOutcome(tr, id, v.Flags, f.kind, v.Attempt, f.reason)
	q.retainTx(tr, f)
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
	case a.Kind == AckComplete || a.Kind == AckCancel:
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
	if a.Kind == AckComplete || a.Kind == AckCancel {
		return n + a.finBytes
	}
	zl := a.Lease.zl
	return n + len(a.Lease.Payload) + len(a.Lease.Checkpoint) + len(a.Lease.ItemSpace) + len(a.Lease.TaskType) +
		len(zl.v.UniqueKey) + len(a.Lease.LastError) + min(len(a.Error), maxErrorLen) + len(zl.v.Holder) +
		historyLen(zl.v.History) + 32 + min(len(a.Error), maxErrorLen)
}
