package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
)

// Lanes stripped of their pointer (issue 22, item 3). A lane state whose
// pointer entry is missing is what copying a tenant's subspace leaves (the
// pointer index is in the queue's subspace, not the tenant's): the cover
// of the next enqueue into the lane must find it and write the pointer
// again, never trust the state. Every UnpointEvery the harness deletes the
// pointer entry of an unleased lane that holds jobs, in a zone the resizer
// leaves alone (so that new jobs still land in the lane), then enqueues
// jobs into that lane until its pointer is back; a lane still without one
// after unpointProbes enqueues into it is a violation, and every job of the
// lane, those stranded by the strip included, must complete (0 lost).

// unpointProbes bounds the enqueues into a stripped lane.
const unpointProbes = 4

// probeProducerID is the producer of the jobs enqueued into stripped lanes.
const probeProducerID = 91

// unpointable lists the zones' tenants whose lanes may be stripped: the
// empty one without tenants, else every fourth tenant from t03 (which the
// resizer leaves alone: a lane above a shrunk zone's count gets no new
// job, so nothing would repair it).
func (h *harness) unpointable() []string {
	if h.cfg.Tenants == 0 {
		return []string{""}
	}
	var out []string
	for i := 3; i < h.cfg.Tenants; i += 4 {
		out = append(out, h.tenantName(i))
	}
	return out
}

func (h *harness) isUnpointable(tenant string) bool {
	return h.cfg.UnpointEvery > 0 && slices.Contains(h.unpointable(), tenant)
}

// unpointLoop strips a lane's pointer every UnpointEvery on average while
// ctx lasts: half the time in the prefetch type's zone (its backlog waits
// in unleased lanes; the resizer leaves that type alone), else in a work
// type's zone of an unpointable tenant. A zone with no lane to strip is
// looked at again a little later, up to 10 times.
func (h *harness) unpointLoop(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 500))
	probeSeq := 0
	for sleep(ctx, time.Duration(rng.ExpFloat64()*float64(h.cfg.UnpointEvery))) {
		for try := 0; try < 10; try++ {
			tt, tenant := prefetchType, ""
			if h.cfg.PrefetchRate <= 0 || rng.IntN(2) == 0 {
				ts := h.unpointable()
				tenant = ts[rng.IntN(len(ts))]
				types := h.limitTypes()
				tt = types[rng.IntN(len(types))]
			}
			if h.unpointOne(ctx, rng, tt, tenant, &probeSeq) || !sleep(ctx, 200*time.Millisecond) {
				break
			}
		}
	}
}

// unpointOne strips one lane of zone (tt, tenant) and enqueues into it
// until it is repaired; false if it found no lane to strip.
func (h *harness) unpointOne(ctx context.Context, rng *rand.Rand, tt, tenant string, probeSeq *int) bool {
	q, err := h.admin(ctx, false)
	if err != nil {
		return false
	}
	info, err := q.ZoneInfo(ctx, tt, tenant)
	if err != nil {
		return false
	}
	var cands []quick.ZoneLaneInfo
	for _, li := range info.LaneStates {
		if !li.Leased && !li.PointerMissing && li.Lane < info.Lanes && li.ReadyJobs+li.ScheduledJobs+li.LeasedJobs > 0 {
			cands = append(cands, li)
		}
	}
	if len(cands) == 0 {
		return false
	}
	li := cands[rng.IntN(len(cands))]
	stripped, err := h.stripPointer(ctx, tt, tenant, li)
	if err != nil || !stripped {
		return false
	}
	h.probe(ctx, q, tt, tenant, li, probeSeq)
	return true
}

// probe enqueues into stripped lane li of zone (tt, tenant) until its
// pointer is back, at most unpointProbes jobs landing in it.
func (h *harness) probe(ctx context.Context, q *quick.Queue, tt, tenant string, li quick.ZoneLaneInfo, probeSeq *int) {
	h.unpointed.Add(1)
	landed := 0
	for landed < unpointProbes {
		info, err := q.ZoneInfo(ctx, tt, tenant)
		if err != nil {
			return
		}
		i := slices.IndexFunc(info.LaneStates, func(s quick.ZoneLaneInfo) bool { return s.Priority == li.Priority && s.Lane == li.Lane })
		if i < 0 || !info.LaneStates[i].PointerMissing {
			h.unpointRepaired.Add(1)
			return // repaired (by a probe or a producer), or emptied and gone
		}
		var id quick.ID
		for tries := 0; ; tries++ {
			if id = q.NewID(); lanes.OfID(id, info.Lanes) == li.Lane {
				break
			}
			if tries > 10_000 {
				return
			}
		}
		kind := KindNormal
		if tt == prefetchType {
			kind = KindHold
		}
		body, _ := json.Marshal(payload{Kind: kind, Producer: probeProducerID, Seq: *probeSeq})
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_, err = q.Enqueue(ectx, quick.NewJob{ID: id, TaskType: tt, ItemSpace: tenant, Priority: li.Priority, Payload: body, UniqueKey: h.uniqueKey(id)})
		cancel()
		h.rec.job(JobRec{ID: id, Kind: kind, Producer: probeProducerID, Seq: *probeSeq, TaskType: tt, Tenant: tenant, Uncertain: err != nil})
		*probeSeq++
		if err == nil {
			landed++
		}
	}
	info, err := q.ZoneInfo(ctx, tt, tenant)
	if err != nil {
		return
	}
	for _, s := range info.LaneStates {
		if s.Priority == li.Priority && s.Lane == li.Lane && s.PointerMissing && s.Lane < info.Lanes {
			h.rec.problem(fmt.Sprintf("lane %d of zone (%s, %.8q…) is still without its pointer after %d enqueues into it: its jobs are stranded", li.Lane, tt, tenant, unpointProbes))
			return
		}
	}
	h.unpointRepaired.Add(1)
}

// stripPointer deletes the pointer entry S (2, "p", type, prio, ptrMs,
// laneHash, lane) of lane li of zone (tt, tenant), if it is still where
// ZoneInfo saw it: one range read of the task type's pointers of that
// priority and time, serializable, so that a claim moving the pointer
// meanwhile makes the transaction retry and find it gone. It writes
// nothing else: the lane state stays, naming a pointer that is not there.
func (h *harness) stripPointer(ctx context.Context, tt, tenant string, li quick.ZoneLaneInfo) (bool, error) {
	at := h.space.Sub(int64(2), "p", tt, int64(li.Priority), li.NextVest.UnixMilli())
	b, e := at.Range()
	var stripped bool
	err := h.cnt.Transact(ctx, func(tr kv.Transaction) error {
		stripped = false
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: 1000}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := at.Unpack(p.Key)
			if err != nil || len(t) != 2 {
				continue
			}
			if lane, _ := t[1].(int64); int(lane) != li.Lane || pointerTenant(p.Value) != tenant {
				continue
			}
			tr.Clear(p.Key)
			stripped = true
			return nil
		}
		return nil
	})
	return stripped, err
}

// pointerTenant reads the item space of a pointer entry's value (field 2;
// field 1 is the zone's key prefix).
func pointerTenant(v []byte) string {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return ""
		}
		v = v[n:]
		m := protowire.ConsumeFieldValue(num, typ, v)
		if m < 0 {
			return ""
		}
		if num == 2 && typ == protowire.BytesType {
			s, _ := protowire.ConsumeBytes(v)
			return string(s)
		}
		v = v[m:]
	}
	return ""
}
