package quick

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
)

// Requeue of a dead letter. A job that died became a
// record S (1, "j", id) with flagZones (so there is one dead-letter list per
// task type); Requeue puts it back into its zone as a job key, and the record
// goes, since a live job has none. With the record gone a retry after
// commit_unknown_result could not tell its own requeue from a job cancelled
// meanwhile, so the requeue also writes S (2, "m", id) holding its time
// (requeueMarkField): a retry that finds no record but that marker with its
// own time knows its earlier attempt committed. The marker is purged with
// the zones enqueue markers, by the ID's time.

// requeueMarkField is the field of a zones marker holding the time of the
// requeue that wrote it: unlike an enqueue marker, whose presence alone is
// the answer, it must name the attempt.
const requeueMarkField = 15

func requeueMark(nowMs int64) []byte { return wire.AppendVarint(nil, requeueMarkField, uint64(nowMs)) }

// zoneRequeuedAt reports whether S (2, "m", id) says a requeue at nowMs
// committed (a marker that does not decode says no).
func (q *Queue) zoneRequeuedAt(tr kv.Transaction, id ID, nowMs int64) (bool, error) {
	v, err := tr.Get(q.zk.markKey(id)).Get()
	if err != nil || v == nil {
		return false, err
	}
	at := int64(-1)
	derr := walkValue(v, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
		if num == requeueMarkField {
			at = int64(x)
		}
		return nil
	})
	return derr == nil && at == nowMs, nil
}

// requeueZoneTx places a zones dead letter (rec, already checked dead and
// not quarantined) back into its zone, vesting at now, with its attempts
// reset: in the lane laneOfID gives under the zone's current lane count,
// with its payload inline or in the zone's blob as InlinePayload decides,
// and its lane covered.
//
// Keys: snapshot reads of Z (2), Z (3, id), Z (4, id) and S (1, "c", id);
// the lane state (cover, serializable) and, for a short-job task type, the
// lane's hand-out mark (vestAfterHandout); clears S (1, "j", id),
// S (1, "d", type, ms, id) and S (1, "c", id); adds to S (1, "dn", type);
// sets the job key, S (2, "m", id), S (2, "i", id) when trackable, the
// blobs when large, and the lane state and pointer when they must move.
func (q *Queue) requeueZoneTx(tr kv.Transaction, id ID, rec *record, now time.Time) error {
	prio, err := Priority(rec.Priority).normalize()
	if err != nil || prio != Priority(rec.Priority) {
		return fmt.Errorf("%w: dead letter %s has priority %d", ErrCorrupt, id, rec.Priority)
	}
	z := q.zoneOf(rec.TaskType, rec.ItemSpace)
	snap := tr.Snapshot()
	mf := snap.Get(z.metaKey())
	bf := snap.Get(z.blobKey(id))
	zcf := snap.Get(z.ckptKey(id))
	cf := snap.Get(q.k.ckptKey(id))
	lanes := q.opts.ZoneLanes
	mv, err := mf.Get()
	if err != nil {
		return err
	}
	if mv != nil {
		var m zoneMeta
		if m.unmarshal(mv) == nil && m.Lanes > 0 {
			lanes = int(m.Lanes)
		}
	}
	l := laneRef{z: z, prio: prio, lane: laneOfID(id, lanes)}
	v := zjobValue{MaxAttempts: rec.MaxAttempts, LastError: rec.LastError, Flags: rec.Flags & (flagWaitable | flagTrackable),
		RetainMs: rec.RetainMs, History: rec.History}
	if q.tracked(rec.TaskType) {
		v.Flags |= flagTrackable
	}
	if ms := rec.CreatedAtMs; ms != 0 && ms != id.Time().UnixMilli() {
		v.CreatedAtMs = ms
	}
	blob, err := bf.Get()
	if err != nil {
		return err
	}
	switch {
	case len(rec.Payload) > InlinePayload:
		tr.Set(z.blobKey(id), rec.Payload)
		v.Flags |= flagBlob
	case len(rec.Payload) == 0 && blob != nil:
		v.Flags |= flagBlob // the payload stayed in the zone
	default:
		v.Payload = rec.Payload
	}
	ck, err := cf.Get()
	if err != nil {
		return err
	}
	zck, err := zcf.Get()
	if err != nil {
		return err
	}
	switch {
	case ck != nil && len(ck) > InlinePayload:
		tr.Set(z.ckptKey(id), ck)
		v.Flags |= flagCheckpoint | flagCkptBlob
	case ck != nil:
		v.Checkpoint = ck
		v.Flags |= flagCheckpoint
	case zck != nil:
		v.Flags |= flagCheckpoint | flagCkptBlob
	}
	nowMs := now.UnixMilli()
	// Never behind a short-job holder's hand-out mark (issue 22, item 1).
	vestMs, err := q.vestAfterHandout(tr, l, nowMs, id)
	if err != nil {
		return err
	}
	tr.Clear(q.k.deadKey(rec.TaskType, rec.DeadAtMs, id))
	tr.Add(q.k.deadCountKey(rec.TaskType), le64(-1))
	tr.Clear(q.k.ckptKey(id))
	tr.Clear(q.k.jobKey(id))
	q.clearOutcome(tr, id, v.Flags)
	tr.Set(l.jobKey(vestMs, id), v.marshal())
	q.indexSet(tr, l, vestMs, id, v.Flags)
	tr.Set(q.zk.markKey(id), requeueMark(nowMs))
	return q.cover(tr, l, vestMs, nowMs)
}
