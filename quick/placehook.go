package quick

import (
	"context"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
)

func init() { testhook.PlaceZone = placeZone }

// placeZone writes one job into its zone as the queue lays it out
// (ZONES.md): its key Z (0, prio, lane, vestMs, id) with the whole job in
// its value, the payload in Z (3, id) when over InlinePayload, its lane
// covered, the lookup index set when its task type is Trackable, the task
// type registered. It is for tests of inspection only: no unique key, no
// enqueue marker, no retry recognition.
func placeZone(ctx context.Context, q *Queue, in NewJob) (ID, error) {
	now := q.Now()
	j, err := q.prepare(now, in)
	if err != nil {
		return ID{}, err
	}
	z := q.zoneOf(j.TaskType, j.ItemSpace)
	err = q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		lanes := q.opts.ZoneLanes
		mv, err := tr.Get(z.metaKey()).Get()
		if err != nil {
			return err
		}
		if mv != nil {
			var m zoneMeta
			if m.unmarshal(mv) == nil && m.Lanes > 0 {
				lanes = int(m.Lanes)
			}
		}
		l := laneRef{z: z, prio: j.Priority, lane: laneOfID(j.ID, lanes)}
		v := zjobValue{MaxAttempts: int64(j.MaxAttempts), Flags: q.waitFlag(j.NewJob), Payload: j.Payload, Trace: j.trace}
		if q.tracked(j.TaskType) {
			v.Flags |= flagTrackable
		}
		if len(v.Payload) > InlinePayload {
			tr.Set(z.blobKey(j.ID), v.Payload)
			v.Payload, v.Flags = nil, v.Flags|flagBlob
		}
		vestMs := j.runAt.UnixMilli()
		tr.Set(l.jobKey(vestMs, j.ID), v.marshal())
		tr.Set(q.k.typeKey(j.TaskType), nil)
		q.indexSet(tr, l, vestMs, j.ID, v.Flags)
		return q.cover(tr, l, vestMs, now.UnixMilli())
	})
	return j.ID, err
}
