package quick

import (
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
)

// Splitting a deep lane (docs/design.md, "Lanes inside a hot zone").
//
// A lane is worked by one claim at a time (its holder leases it), so a
// backlog sitting in one lane drains at one claim per commit latency
// however many workers wait: a zone grown later spreads only the jobs
// enqueued after the growth, and a backlog enqueued while no worker
// claimed (a deploy, workers not started yet) all sits in the lanes of the
// count it found — one, for a new zone. Measured before splitting
// (quickbench bench, backlog of 20,000 in one zone): 0.2–0.3× the lanes
// layout's drain rate at 4 to 64 workers.
//
// So the claim that holds such a lane also moves the next chunk of its
// vested backlog, behind the jobs it takes, into an empty lane of the zone,
// whose new pointer any other worker can take at once: the holder takes
// Max and splits off up to zsplitChunk(Max) per claim, and the chunk lanes
// drain in parallel. A split happens only in a lane that is backlogged by
// the growth rule's measure (the claim leaves vested jobs behind and the
// oldest it took waited at least zoneGrowWait), outside short-job mode
// (whose lane lease protects jobs that do not move, short.go), and into a
// lane that holds nothing: one with no lane state, found by a snapshot read
// of the zone's lane states for the priority, or, failing one, into an idle
// lane (unleased, its pointer in the future: it holds only leased or
// delayed keys), whose pointer it pulls to now. When every lane of the
// count has work or a holder, the split doubles the count (up to Options.MaxZoneLanes), as
// growth does, and uses the first new lane.
//
// What moves: pending jobs (no token: never leased, or released), vested,
// in vesting order right after those the claim took; each keeps its vesting
// time, value and ID, so the order of a tenant's backlog holds but for the
// interleaving of two lanes. Leased keys (lapsed leases), exhausted and
// corrupt entries are left for the next claim of the lane to deal with. A
// moved job no longer sits in the lane its ID hashes to: nothing relies on
// that (lookup goes through the index, kept at the move; the growth rule
// then sees a mismatch and does not grow, which is right, the backlog is
// old).
//
// The chunk lane's pointer is filed at the current second, behind every
// second that vested earlier, as a hand-back with vested jobs left is, so
// that splitting one tenant's backlog does not put it ahead of the tenants
// waiting since.
//
// Cost: a moved job pays a clear and a set once more (its whole value, as a
// claim's move does); a split costs the chunk lane's state and pointer
// (2 sets) and one read-conflict key on that state, and one snapshot range
// read of at most MaxZoneLanes lane states, made by claims of a backlogged
// lane; only when it finds lanes to fill does a second round trip read the
// backlog to move, as many chunks as it found lanes.

// zsplitChunk is how many jobs a claim that took max moves into one new
// lane at most: enough that the chunk keeps another worker busy for a few
// claims; zsplitLanes is how many lanes one split fills at most. Both are
// bounded so that a split never makes a claim transaction large: at most
// 4 × 256 keys moved, and the moves count as the claim's rewrites (at most
// claimRewriteBytes, 1 MB, with its dead letters and quarantines).
func zsplitChunk(max int) int { return lanes.SplitChunk(max) }

const zsplitLanes = lanes.SplitWays

// splitTarget is a lane a split moves a chunk into, and its pointer's time
// as read (-1: the lane had no state).
type splitTarget struct {
	lane   int
	oldPtr int64
}

// splitLane moves up to zsplitLanes chunks of zsplitChunk(opts.Max) vested
// pending jobs of lane l, found after the key after, into empty (or idle)
// lanes of l's zone, a chunk each (see above). n is the zone's lane count
// after this claim's growth. left reports whether l may still hold vested
// keys after the split (false only when the split's read reached the
// lane's end or its first future key, futureMs, and moved every vested key
// it met); futureMs is -1 when it met none.
//
// Keys: a snapshot range read of Z (1, prio) (at most MaxZoneLanes+1 lane
// states), then, if it found lanes to fill, one of Z (0, prio, lane) after
// `after` (a chunk per lane found, at most zsplitLanes, plus
// zclaimAllowance); per moved job a read-conflict key, a clear
// and a set (and S (2, "i", id) when trackable); per chunk lane a
// read-conflict key on its state, its state and pointer set; a
// read-conflict key on Z (2) and a set of it when it grows the zone.
func (q *Queue) splitLane(tr kv.Transaction, opts ClaimOptions, l laneRef, n int, after []byte, now time.Time, b *claimBudget) (left bool, futureMs int64, err error) {
	chunk := zsplitChunk(opts.Max)
	nowMs := now.UnixMilli()
	snap := tr.Snapshot()
	states := rangeOf(l.z.space.Sub(int64(zLane), int64(l.prio)))
	left, futureMs = true, -1
	skvs, err := snap.GetRange(states, kv.RangeOptions{Limit: q.opts.MaxZoneLanes + 1}).GetSliceWithError()
	if err != nil {
		return left, futureMs, err
	}
	// The lane's backlog is read only once there are lanes to move it
	// into, and only as much as they take: read beside the states (one
	// round trip), a zone whose lanes are all busy at its cap paid up to
	// zsplitLanes chunks of keys per claim for nothing (quickbench,
	// zones-16, backlog: 82–102 keys read per job, against 5–14 now).
	targets, err := q.splitTargets(tr, l, n, skvs, nowMs)
	if err != nil || len(targets) == 0 {
		return left, futureMs, err
	}
	limit := len(targets)*chunk + zclaimAllowance
	rest := l.laneRange()
	rest.Begin = keyAfter(after)
	kvs, err := snap.GetRange(rest, kv.RangeOptions{Limit: limit}).GetSliceWithError()
	if err != nil {
		return left, futureMs, err
	}
	moved := make([]int, len(targets))
	t, kept, end := 0, false, len(kvs) < limit
	for _, kvp := range kvs {
		if moved[t] == chunk {
			if t+1 == len(targets) {
				kept, end = true, false
				break
			}
			t++
		}
		jk, perr := l.z.parseJobKey(kvp.Key)
		if perr != nil {
			kept = true // a claim of the lane quarantines it
			continue
		}
		if jk.VestMs > nowMs {
			futureMs, end = jk.VestMs, true
			break
		}
		var v zjobValue
		if v.unmarshal(kvp.Value) != nil || v.Token != 0 || v.exhausted() || v.Flags&flagSplit != 0 {
			kept = true // a claim of the lane deals with it
			continue
		}
		if !b.fits(2*len(kvp.Key)+len(kvp.Value), true) {
			kept, end = true, false
			break
		}
		if err := q.conflictOn(tr, kvp.Key); err != nil {
			return true, -1, err
		}
		dst := laneRef{z: l.z, prio: l.prio, lane: targets[t].lane}
		v.Flags |= flagSplit
		tr.Clear(kvp.Key)
		tr.Set(dst.jobKey(jk.VestMs, jk.ID), v.marshal())
		q.indexSet(tr, dst, jk.VestMs, jk.ID, v.Flags)
		moved[t]++
	}
	if moved[0] == 0 {
		return true, -1, nil
	}
	for i, tg := range targets {
		if moved[i] == 0 {
			break
		}
		// The chunk lane's state as read (none, or idle): conflict if it
		// changes (an enqueue creating or pulling it, a claim taking it),
		// and file its pointer as a hand-back: the chunk is the split
		// lane's work, which goes behind every lane already waiting
		// (pointer.go, handBackMs), not ahead as new work would.
		dst := laneRef{z: l.z, prio: l.prio, lane: tg.lane}
		if err := q.conflictOn(tr, dst.stateKey()); err != nil {
			return true, -1, err
		}
		q.movePointerTo(tr, dst, tg.oldPtr, laneState{PtrMs: handBackMs(nowMs), Vested: true})
	}
	q.opts.Logger.Debug("quick: split a deep lane", "lane", l.String(), "chunks", moved)
	return kept || !end, futureMs, nil
}

// splitTargets picks up to zsplitLanes lanes of l's zone to move chunks
// into, from its lane states skvs (read at snapshot): empty lanes first,
// then idle ones. A lane is busy when it has work now (a vested pointer) or
// a holder (a lease); an idle lane (its pointer in the future: only leased
// or delayed keys) takes a chunk as well as an empty one does, its pointer
// pulled to now; chunk lanes whose jobs run stay idle until those leases
// end, so without them splits would soon find no lane. With none of either
// below n, the zone doubles (up to MaxZoneLanes) and the new lanes serve.
//
// Keys: a read-conflict key on Z (2) and a set of it when it grows.
func (q *Queue) splitTargets(tr kv.Transaction, l laneRef, n int, skvs []kv.KeyValue, nowMs int64) ([]splitTarget, error) {
	busy := map[int]bool{l.lane: true}
	idle := map[int]int64{} // lane: its pointer's time
	for _, kvp := range skvs {
		lane, ok := l.z.parseStateLane(kvp.Key)
		if !ok {
			continue
		}
		var st laneState
		if st.unmarshal(kvp.Value) != nil || st.leased() || st.PtrMs <= nowMs {
			busy[lane] = true
			continue
		}
		idle[lane] = st.PtrMs
	}
	pick := func(from, to int) []splitTarget {
		var empty, idles []splitTarget
		// From a random lane on: two claims splitting two lanes of one
		// zone at once rarely pick the same targets (which conflict).
		off := rand.IntN(to - from)
		for i := range to - from {
			t := from + (off+i)%(to-from)
			if busy[t] {
				continue
			}
			if ptr, ok := idle[t]; ok {
				idles = append(idles, splitTarget{lane: t, oldPtr: ptr})
			} else {
				empty = append(empty, splitTarget{lane: t, oldPtr: -1})
			}
		}
		out := append(empty, idles...)
		return out[:min(len(out), zsplitLanes)]
	}
	// A read cut at its limit (a zone set above MaxZoneLanes) saw the
	// states of the lanes up to its last key only: a lane past it is
	// unknown, not empty, and may be leased (issue 22, item 7: a split
	// overwrote such a lane's state, clobbering a live lease's token).
	known := n
	if len(skvs) > q.opts.MaxZoneLanes && !mutant.On("quick.split-unread") {
		if last, ok := l.z.parseStateLane(skvs[len(skvs)-1].Key); ok {
			known = min(n, last+1)
		} else {
			known = 0
		}
	}
	if known > 0 {
		if out := pick(0, known); len(out) > 0 {
			return out, nil
		}
	}
	if n >= q.opts.MaxZoneLanes || len(skvs) > q.opts.MaxZoneLanes {
		return nil, nil // every lane busy, and the zone at its cap
	}
	grown := lanes.Grow(n, q.opts.MaxZoneLanes)
	out := pick(n, grown)
	if len(out) == 0 {
		return nil, nil
	}
	if err := tr.AddReadConflictKey(l.z.metaKey()); err != nil {
		return nil, err
	}
	m := zoneMeta{Lanes: int64(grown)}
	tr.Set(l.z.metaKey(), m.marshal())
	return out, nil
}

// splitBefore reports whether the first job a claim met was moved by a
// split already: the lane is a chunk, which its claims drain without
// splitting it again (a job moves once at most).
func splitBefore(cands []zcand) bool {
	return len(cands) > 0 && cands[0].v.Flags&flagSplit != 0
}

// keyAfter is the first key after k.
func keyAfter(k []byte) []byte { return append(append([]byte(nil), k...), 0) }
