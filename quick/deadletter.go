package quick

import (
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// zoneDeadLetterTx moves a job to the dead letters. A dead
// letter is a record S (1, "j", id) (State dead, Flags with flagZones, so that
// Requeue places it back into its zone), because dead letters are rare,
// listed per task type and kept for inspection. The record holds the payload (read from Z (3, id) when it was
// kept beside the job key); a checkpoint goes to
// S (1, "c", id), so ListDead, Requeue and PurgeDead treat every
// dead letter alike. The job key and its blobs are cleared. flagBlob and
// flagCkptBlob are dropped from the record's flags: they describe where the
// zone kept the bytes, which no longer holds.
//
// v is the job's value as it ends (Attempt: the runs started); key is its
// job key, jk that key parsed. The caller runs the task type's dead-letter
// hook where one applies (claims do; acks do not).
//
// Keys: reads Z (3, id) and Z (4, id) (snapshot) when the job has them;
// sets S (1, "j", id), S (1, "d", type, ms, id), S (1, "c", id) when the job
// has a checkpoint, S (1, "o", id) when it is waitable; adds to
// S (1, "dn", type); clears the job key, its blobs, its unique key and its
// lookup index. Bound: one record (payload up to MaxPayloadSize) and one
// checkpoint (up to MaxCheckpointLen), about 200 kB.
func (q *Queue) zoneDeadLetterTx(tr kv.Transaction, now time.Time, l laneRef, key []byte, jk zjobKey, v zjobValue, reason string) error {
	id := jk.ID
	reason = truncate(reason, maxErrorLen)
	var blobF, ckF kv.Future[[]byte]
	if v.Flags&flagBlob != 0 {
		blobF = tr.Snapshot().Get(l.z.blobKey(id))
	}
	if v.hasCheckpoint() && v.Flags&flagCkptBlob != 0 {
		ckF = tr.Snapshot().Get(l.z.ckptKey(id))
	}
	payload, ck := v.Payload, v.Checkpoint
	if blobF != nil {
		b, err := blobF.Get()
		if err != nil {
			return err
		}
		if b == nil {
			q.opts.Logger.Warn("quick: dead-lettering a zones job whose payload blob is missing", "id", id, "lane", l.String())
		}
		payload = b
	}
	if ckF != nil {
		b, err := ckF.Get()
		if err != nil {
			return err
		}
		ck = b
	}
	created := v.CreatedAtMs
	if created == 0 {
		created = id.Time().UnixMilli()
	}
	deadMs := now.UnixMilli()
	if reason != "" {
		q.noteFailure(l.z.taskType, &v, now, reason)
	}
	rec := record{
		TaskType: l.z.taskType, Priority: int64(jk.Priority), ItemSpace: l.z.itemSpace, Payload: payload,
		MaxAttempts: v.MaxAttempts, UniqueKey: v.UniqueKey, CreatedAtMs: created,
		State: stateDead, DeadAtMs: deadMs, LastError: reason, Attempts: v.Attempt,
		Flags:    (v.Flags | flagZones) &^ (flagBlob | flagCkptBlob),
		RetainMs: v.RetainMs, History: v.History,
	}
	q.recordOutcome(tr, id, v.Flags, OutcomeDeadLettered, v.Attempt, reason)
	tr.Clear(key)
	if v.Flags&flagBlob != 0 {
		tr.Clear(l.z.blobKey(id))
	}
	if v.Flags&flagCkptBlob != 0 {
		tr.Clear(l.z.ckptKey(id))
	}
	if v.hasCheckpoint() && ck != nil {
		tr.Set(q.k.ckptKey(id), ck)
	} else {
		rec.Flags &^= flagCheckpoint
	}
	tr.Set(q.k.jobKey(id), rec.marshal())
	tr.Set(q.k.deadKey(rec.TaskType, deadMs, id), nil)
	tr.Add(q.k.deadCountKey(rec.TaskType), le64(1))
	if v.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(rec.TaskType, v.UniqueKey))
	}
	q.indexClear(tr, id, v.Flags)
	return nil
}
