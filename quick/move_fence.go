package quick

import (
	"bytes"
	"context"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// The fence of a tenant operation: its token leases every lane of the
// zone (docs/design.md, "Moving, adopting and deleting a tenant").
//
// A lane lease is what already keeps claims off a lane: a leased lane's
// pointer sits at the lease's deadline, an enqueue into it leaves it there
// (cover), a continuing claim or short-job ack of the lane's previous
// holder finds another token and fails with ErrLaneLost, and a limit's
// wake-up skips it. So fencing a zone is leasing each of its lanes (those
// the zone's meta names, and any other with a lane state) with the
// operation's token until a deadline far ahead; claims and acks need no
// check of their own, and a tenant that is not moving pays nothing. A
// fenced lane whose operation crashed and was never resumed is taken over
// at the deadline like any lapsed lease: the fence never loses a job.

// fenceBatch is how many lanes one fencing transaction handles.
const fenceBatch = 256

// fenceHolder is the holder name of a tenant operation's lane leases.
const fenceHolder = "quick:tenant-op"

// zoneLaneTops returns the zone's lane count (its meta, or the queue's
// ZoneLanes) and, per priority, one past the highest lane with a state.
//
// Keys: reads Z (2) and, per priority, the last key of Z (1, prio)
// (snapshot).
func (q *Queue) zoneLaneTops(ctx context.Context, z zone) (int, [numPriorities]int, error) {
	var n int
	var tops [numPriorities]int
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		snap := tr.Snapshot()
		metaF := snap.Get(z.metaKey())
		var lasts [numPriorities]kv.RangeResult
		for i, p := range priorities {
			lasts[i] = snap.GetRange(rangeOf(z.space.Sub(int64(zLane), int64(p))), kv.RangeOptions{Limit: 1, Reverse: true})
		}
		m, err := metaF.Get()
		if err != nil {
			return err
		}
		n = q.zoneLanesOf(m)
		for i := range priorities {
			kvs, err := lasts[i].GetSliceWithError()
			if err != nil {
				return err
			}
			tops[i] = 0
			if len(kvs) == 1 {
				if lane, ok := z.parseStateLane(kvs[0].Key); ok {
					tops[i] = lane + 1
				}
			}
		}
		return nil
	})
	return n, tops, err
}

// fenceZone leases every lane of z with tok until untilMs: the lanes under
// the zone's lane count n (at least minLanes), and those above it that have
// a state. It is idempotent: a lane already fenced by tok only has its
// deadline moved.
//
// Keys: per transaction up to fenceBatch lane states Z (1, prio, lane)
// (serializable); per lane the state set and its pointer S (2, "p", ...)
// moved to untilMs.
//
// breakName names the mutant that leaves the zone unfenced (one for a
// move's source, one for its destination).
func (q *Queue) fenceZone(ctx context.Context, z zone, tok uint64, untilMs int64, minLanes int, breakName string) error {
	n, tops, err := q.zoneLaneTops(ctx, z)
	if err != nil {
		return err
	}
	n = max(n, minLanes)
	for i, p := range priorities {
		top := max(n, tops[i])
		for from := 0; from < top; from += fenceBatch {
			to := min(from+fenceBatch, top)
			err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
				return q.fenceLanes(tr, z, p, from, to, n, tok, untilMs, breakName)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// fenceLanes fences lanes [from, to) of priority p of z in tr; a lane at or
// above n is fenced only when it has a state.
func (q *Queue) fenceLanes(tr kv.Transaction, z zone, p Priority, from, to, n int, tok uint64, untilMs int64, breakName string) error {
	states := make([]kv.Future[[]byte], to-from)
	for i := range states {
		states[i] = tr.Get(laneRef{z: z, prio: p, lane: from + i}.stateKey())
	}
	for i, f := range states {
		l := laneRef{z: z, prio: p, lane: from + i}
		v, err := f.Get()
		if err != nil {
			return err
		}
		old, held := int64(-1), int64(0)
		if v != nil {
			var s laneState
			if s.unmarshal(v) == nil {
				if s.Token == tok && s.PtrMs == untilMs {
					continue
				}
				old = s.PtrMs
				switch {
				case s.Token == tok:
					held = s.HeldMs // a renewal keeps what the first fence saw
				case s.leased() && s.Short && !mutant.On("quick.move-short-held"):
					// A short-job holder runs the lane's handed-out jobs
					// under this lease alone, whatever their keys say.
					held = s.PtrMs
				}
			}
		} else if l.lane >= n {
			continue
		}
		if fenceBroken(breakName) {
			continue // the break: the zone stays claimable during the operation
		}
		q.movePointerTo(tr, l, old, laneState{PtrMs: untilMs, Token: tok, Holder: fenceHolder, HeldMs: held})
	}
	return nil
}

// fenceBroken reports whether the mutant named breakName is on (each
// named literally, as .ci/mutants looks for them).
func fenceBroken(breakName string) bool {
	switch breakName {
	case "quick.move-fence":
		return mutant.On("quick.move-fence")
	case "quick.move-fence-dest":
		return mutant.On("quick.move-fence-dest")
	}
	return false
}

// parseStateKey returns the priority and lane of a lane state key.
func (z zone) parseStateKey(key []byte) (Priority, int, bool) {
	t, err := z.space.Unpack(key)
	if err != nil || len(t) != 3 {
		return 0, 0, false
	}
	kind, ok0 := t[0].(int64)
	prio, ok1 := t[1].(int64)
	lane, ok2 := t[2].(int64)
	if !ok0 || kind != zLane || !ok1 || !ok2 || lane < 0 || lane > maxZoneLanes {
		return 0, 0, false
	}
	p, err := Priority(prio).normalize()
	if err != nil || p != Priority(prio) {
		return 0, 0, false
	}
	return p, int(lane), true
}

// eachLaneStates walks z's lane states in pages of fenceBatch, one
// transaction each, calling fn with each page's states (read
// serializably). fn returns false to stop the walk.
func (q *Queue) eachLaneStates(ctx context.Context, z zone, fn func(tr kv.Transaction, states []kv.KeyValue) (bool, error)) error {
	r := rangeOf(z.space.Sub(int64(zLane)))
	for {
		var next []byte
		var stop bool
		err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
			next, stop = nil, false
			kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: fenceBatch}).GetSliceWithError()
			if err != nil {
				return err
			}
			goOn, err := fn(tr, kvs)
			if err != nil {
				return err
			}
			stop = !goOn
			if len(kvs) == fenceBatch {
				next = append(bytes.Clone(kvs[len(kvs)-1].Key), 0)
			}
			return nil
		})
		if err != nil || stop || next == nil {
			return err
		}
		r.Begin = next
	}
}

// unfenceZone hands back every lane of z that tok fences: its pointer goes
// to the lane's earliest key, filed as new work of that key's second as an
// enqueue files it (so jobs that waited at the source keep their place
// among the others), or is removed with the state when the lane is empty.
// Lanes another lease took over are left to it.
//
// Keys: per page, fenceBatch lane states (serializable), the first key of
// each fenced lane (a read-conflict range up to it), the state and
// pointer written or cleared.
func (q *Queue) unfenceZone(ctx context.Context, z zone, tok uint64) error {
	return q.eachLaneStates(ctx, z, func(tr kv.Transaction, states []kv.KeyValue) (bool, error) {
		nowMs := q.Now().UnixMilli()
		type fenced struct {
			l     laneRef
			s     laneState
			first kv.RangeResult
		}
		var fs []fenced
		for _, kvp := range states {
			p, lane, ok := z.parseStateKey(kvp.Key)
			var s laneState
			if !ok || s.unmarshal(kvp.Value) != nil || s.Token != tok {
				continue
			}
			l := laneRef{z: z, prio: p, lane: lane}
			fs = append(fs, fenced{l: l, s: s, first: tr.GetRange(l.laneRange(), kv.RangeOptions{Limit: 1})})
		}
		for _, f := range fs {
			kvs, err := f.first.GetSliceWithError()
			if err != nil {
				return false, err
			}
			if len(kvs) == 0 {
				tr.Clear(q.pointerKeyOf(f.l, f.s.PtrMs))
				tr.Clear(f.l.stateKey())
				continue
			}
			vest := nowMs // a key that does not parse: a claim comes to quarantine it
			if jk, err := z.parseJobKey(kvs[0].Key); err == nil {
				vest = jk.VestMs
			}
			q.movePointer(tr, f.l, f.s.PtrMs, laneState{PtrMs: vest})
		}
		return true, nil
	})
}

// fenceDeadline is when a fence set now lasts until.
func (q *Queue) fenceDeadline(d time.Duration) int64 {
	return q.Now().Add(d).UnixMilli()
}
