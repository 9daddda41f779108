package quick

import (
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// zoneDeadLetterTx moves a zones-layout job to the dead letters: its job
// key (and payload blob) go, and a schema-1 dead record S (1, "j", id) with
// State dead and Flags|flagZones takes its place, holding its payload,
// item space and priority so that Requeue can place it back into its
// zone; its checkpoint moves to S (1, "c", id) as a schema-1 dead letter
// keeps it. Like deadLetterTx it records the outcome of a waitable job,
// adds the dead-letter index key and count, and frees its unique key; it
// also clears its lookup index entry (trackable jobs). It does not run the
// DeadLetterHook: a claim that dead-letters a job on its own does.
//
// v is the job's value as stored at key (jk parsed from key).
//
// Keys: snapshot reads of Z (3, id) and Z (4, id) when the payload or
// checkpoint is there; clears key, Z (3, id), Z (4, id); sets
// S (1, "j", id), S (1, "d", type, ms, id), S (1, "c", id) for a
// checkpoint and S (1, "o", id) for a waitable job; adds to
// S (1, "dn", type); clears S (1, "u", type, key) and S (2, "i", id).
func (q *Queue) zoneDeadLetterTx(tr kv.Transaction, now time.Time, l laneRef, key []byte, jk zjobKey, v zjobValue, reason string) error {
	payload, ckpt, err := q.zjobBytes(tr, l.z, jk.ID, &v)
	if err != nil {
		return err
	}
	q.zdeadWrite(tr, now, l, key, jk, v, payload, ckpt, reason)
	return nil
}

// zjobBytes returns a job's payload and checkpoint, reading them from
// their own keys when they are not inline (one round trip for both).
func (q *Queue) zjobBytes(tr kv.Transaction, z zone, id ID, v *zjobValue) (payload, ckpt []byte, err error) {
	var pf, cf kv.Future[[]byte]
	if v.Flags&flagBlob != 0 {
		pf = tr.Snapshot().Get(z.blobKey(id))
	}
	if v.hasCheckpoint() && v.Flags&flagCkptBlob != 0 {
		cf = tr.Snapshot().Get(z.ckptKey(id))
	}
	payload, ckpt = v.Payload, v.Checkpoint
	if pf != nil {
		if payload, err = pf.Get(); err != nil {
			return nil, nil, err
		}
	}
	if cf != nil {
		if ckpt, err = cf.Get(); err != nil {
			return nil, nil, err
		}
	}
	return payload, ckpt, nil
}

// zdeadWrite writes the dead letter of a job whose payload and checkpoint
// are known.
func (q *Queue) zdeadWrite(tr kv.Transaction, now time.Time, l laneRef, key []byte, jk zjobKey, v zjobValue, payload, ckpt []byte, reason string) {
	errText := truncate(reason, maxErrorLen)
	id := jk.ID
	q.recordOutcome(tr, id, v.Flags, OutcomeDeadLettered, v.Attempt, errText)
	tr.Clear(key)
	if v.Flags&flagBlob != 0 {
		tr.Clear(l.z.blobKey(id))
	}
	if v.Flags&flagCkptBlob != 0 {
		tr.Clear(l.z.ckptKey(id))
	}
	createdMs := v.CreatedAtMs
	if createdMs == 0 {
		createdMs = id.Time().UnixMilli()
	}
	flags := v.Flags&^(flagBlob|flagCkptBlob) | flagZones
	if ckpt != nil && v.hasCheckpoint() {
		tr.Set(q.k.ckptKey(id), ckpt)
	} else {
		flags &^= flagCheckpoint
	}
	rec := record{
		TaskType: l.z.taskType, Priority: int64(l.prio), ItemSpace: l.z.itemSpace, Payload: payload,
		MaxAttempts: v.MaxAttempts, UniqueKey: v.UniqueKey, CreatedAtMs: createdMs,
		PlacedAtMs: jk.VestMs, PlacedLane: int64(l.lane), LastError: errText,
		State: stateDead, DeadAtMs: now.UnixMilli(), Attempts: v.Attempt, Flags: flags,
	}
	tr.Set(q.k.jobKey(id), rec.marshal())
	tr.Set(q.k.deadKey(l.z.taskType, rec.DeadAtMs, id), nil)
	tr.Add(q.k.deadCountKey(l.z.taskType), le64(1))
	if v.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(l.z.taskType, v.UniqueKey))
	}
	q.indexClear(tr, id, v.Flags)
}
