package bench

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// mirror carries out lease operations on quick's layout for the strategies
// that claim differently from quick.Claim. Each operation does what its
// quick counterpart does, key for key (quick/s1_claim.go, quick/lease.go), so
// the per-job counts differ only where the claim strategy differs.
type mirror struct {
	l        layout
	taskType string
	lease    time.Duration
}

// mirrorLease is a job leased (or dequeued) by a mirror strategy.
type mirrorLease struct {
	key []byte
	sk  schedKey
	sv  schedValue
}

// candidate is a vested schedule key a claim may take.
type candidate struct {
	key []byte
	sk  schedKey
	sv  schedValue
}

// vested parses scanned keys up to the first that has not vested, and
// returns that one's vesting time as next (0 if none).
func (m mirror) vested(kvs []kv.KeyValue, nowMs int64) (out []candidate, next int64) {
	for _, p := range kvs {
		sk, err := m.l.parse(p.Key)
		if err != nil {
			continue
		}
		if sk.VestMs > nowMs {
			return out, sk.VestMs
		}
		var sv schedValue
		if sv.unmarshal(p.Value) != nil {
			continue
		}
		out = append(out, candidate{key: p.Key, sk: sk, sv: sv})
	}
	return out, 0
}

// leaseTx leases candidates as quick's claim does: a read-conflict key on
// each taken key, a snapshot read of each record (the payload the handler
// needs), and the schedule key moved to now + lease with a fresh token.
func (m mirror) leaseTx(tr kv.Transaction, cands []candidate, holder string, now time.Time) ([]mirrorLease, error) {
	snap := tr.Snapshot()
	recs := make([]kv.Future[[]byte], len(cands))
	for i, c := range cands {
		recs[i] = snap.Get(m.l.jobKey(c.sk.ID))
	}
	out := make([]mirrorLease, 0, len(cands))
	for i, c := range cands {
		rv, err := recs[i].Get()
		if err != nil {
			return nil, err
		}
		if err := tr.AddReadConflictKey(c.key); err != nil {
			return nil, err
		}
		if rv == nil {
			tr.Clear(c.key)
			continue
		}
		sv := c.sv
		sv.Attempt++
		sv.Token = token()
		sv.Holder = holder
		sv.LeasedAtMs = now.UnixMilli()
		sk := m.l.place(m.taskType, c.sk.Priority, now.Add(m.lease).UnixMilli(), c.sk.ID)
		key := m.l.pack(sk)
		tr.Clear(c.key)
		tr.Set(key, sv.marshal())
		tr.Set(m.l.leaseKey(c.sk.ID), leaseIndex(sk.VestMs))
		out = append(out, mirrorLease{key: key, sk: sk, sv: sv})
	}
	return out, nil
}

// deleteTx is the recipe's dequeue: the job's keys go at once.
func (m mirror) deleteTx(tr kv.Transaction, c candidate) error {
	if _, err := tr.Snapshot().Get(m.l.jobKey(c.sk.ID)).Get(); err != nil {
		return err
	}
	tr.Clear(c.key)
	tr.Clear(m.l.jobKey(c.sk.ID))
	tr.Clear(m.l.leaseKey(c.sk.ID))
	if c.sv.Flags&flagCheckpoint != 0 {
		tr.Clear(m.l.ckptKey(c.sk.ID))
	}
	return nil
}

// held reads a lease's key serializably, so a concurrent claim of the same
// job conflicts, and reports whether it still carries the lease's token.
func (m mirror) held(tr kv.Transaction, ml mirrorLease) (bool, error) {
	v, err := tr.Get(ml.key).Get()
	if err != nil || v == nil {
		return false, err
	}
	var sv schedValue
	if sv.unmarshal(v) != nil {
		return false, nil
	}
	return sv.Token == ml.sv.Token, nil
}

// complete deletes a finished job, as quick's AckComplete.
func (m mirror) complete(ctx context.Context, db kv.Database, ml mirrorLease) (lost bool, err error) {
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		ok, err := m.held(tr, ml)
		if err != nil {
			return err
		}
		lost = !ok
		if ok {
			tr.Clear(ml.key)
			tr.Clear(m.l.jobKey(ml.sk.ID))
			tr.Clear(m.l.leaseKey(ml.sk.ID))
			if ml.sv.Flags&flagCheckpoint != 0 {
				tr.Clear(m.l.ckptKey(ml.sk.ID))
			}
		}
		return nil
	})
	return lost, err
}

// fail re-places a failed job after delay, as quick's AckFail: the schedule
// key moves with its token cleared and the record is rewritten.
func (m mirror) fail(ctx context.Context, db kv.Database, ml mirrorLease, now time.Time, delay time.Duration, errText string) (lost bool, err error) {
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		recF := tr.Snapshot().Get(m.l.jobKey(ml.sk.ID))
		ok, err := m.held(tr, ml)
		if err != nil {
			return err
		}
		lost = !ok
		if !ok {
			return nil
		}
		rec, err := recF.Get()
		if err != nil {
			return err
		}
		sv := ml.sv
		sv.Token, sv.Holder, sv.LeasedAtMs = 0, "", 0
		sk := m.l.place(m.taskType, ml.sk.Priority, now.Add(delay).UnixMilli(), ml.sk.ID)
		tr.Clear(ml.key)
		tr.Set(m.l.pack(sk), sv.marshal())
		tr.Clear(m.l.leaseKey(ml.sk.ID))
		tr.Set(m.l.jobKey(ml.sk.ID), replaceRecordFields(rec, sk.VestMs, int64(sk.Lane), sv.Attempt, errText))
		return nil
	})
	return lost, err
}

func token() uint64 {
	for {
		if t := rand.Uint64(); t != 0 {
			return t
		}
	}
}
