package quick

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// The pointer index and the lane states: the primitives every zones-layout
// operation shares (zone.go states the invariant they keep).

// pointerValueOf is the value of a lane's pointer entry.
func pointerValueOf(l laneRef) []byte {
	pv := pointerValue{Zone: l.z.space.Bytes(), ItemSpace: l.z.itemSpace}
	return pv.marshal()
}

func (q *Queue) pointerKeyOf(l laneRef, ptrMs int64) []byte {
	return q.zk.pointerKey(l.z.taskType, l.prio, ptrMs, l.z.hash, l.lane)
}

// movePointer moves a lane's pointer entry from oldMs to newMs and stores
// the lane state s (whose PtrMs must be newMs). oldMs < 0: no entry yet.
func (q *Queue) movePointer(tr kv.Transaction, l laneRef, oldMs int64, s laneState) {
	if oldMs >= 0 && oldMs != s.PtrMs {
		tr.Clear(q.pointerKeyOf(l, oldMs))
	}
	if oldMs != s.PtrMs {
		tr.Set(q.pointerKeyOf(l, s.PtrMs), pointerValueOf(l))
	}
	tr.Set(l.stateKey(), s.marshal())
}

// coverer collects the lanes a transaction places job keys in, each with
// the earliest vesting time placed there, and then makes sure each has a
// pointer that vests by then (or a live lane lease, whose holder looks at
// the lane before handing it back).
type coverer struct {
	byKey map[string]*coverItem
	items []*coverItem
}

type coverItem struct {
	l      laneRef
	vestMs int64
	state  kv.Future[[]byte]
}

// add notes that a job key vesting at vestMs is placed in lane l.
func (c *coverer) add(l laneRef, vestMs int64) {
	k := string(l.stateKey())
	if it, ok := c.byKey[k]; ok {
		it.vestMs = min(it.vestMs, vestMs)
		return
	}
	if c.byKey == nil {
		c.byKey = map[string]*coverItem{}
	}
	it := &coverItem{l: l, vestMs: vestMs}
	c.byKey[k] = it
	c.items = append(c.items, it)
}

// read issues the lane-state reads, serializable on purpose (zone.go): call
// it before waiting on other reads, so they share a round trip.
func (c *coverer) read(tr kv.Transaction) {
	for _, it := range c.items {
		if it.state == nil {
			it.state = tr.Get(it.l.stateKey())
		}
	}
}

// apply creates or pulls earlier the pointers the placed jobs need.
//
// Keys: reads Z (1, prio, lane) of each lane (serializable); writes it and
// S (2, "p", ...) only for a lane that had no pointer or whose unleased
// pointer vested later than the new job.
func (q *Queue) applyCover(tr kv.Transaction, c *coverer, nowMs int64) error {
	c.read(tr)
	for _, it := range c.items {
		v, err := it.state.Get()
		if err != nil {
			return err
		}
		if v == nil {
			q.movePointer(tr, it.l, -1, laneState{PtrMs: it.vestMs})
			continue
		}
		var s laneState
		if derr := s.unmarshal(v); derr != nil {
			// The old pointer is unknown: a new one makes the lane
			// reachable; a stale leftover is cleared by the claim that
			// picks it (acquire).
			q.opts.Logger.Warn("quick: rewriting a lane state that does not decode", "lane", it.l.String(), "err", derr)
			q.movePointer(tr, it.l, -1, laneState{PtrMs: it.vestMs})
			continue
		}
		switch {
		case s.leased():
			// A live lease's holder reads the lane before handing it
			// back; a lapsed one's pointer (at its deadline) has vested.
		case s.PtrMs <= it.vestMs:
		default:
			old := s.PtrMs
			s.PtrMs = it.vestMs
			q.movePointer(tr, it.l, old, s)
		}
	}
	return nil
}

// cover is applyCover for one job key.
func (q *Queue) cover(tr kv.Transaction, l laneRef, vestMs, nowMs int64) error {
	var c coverer
	c.add(l, vestMs)
	return q.applyCover(tr, &c, nowMs)
}

// defaultPeek is how many pointers of each priority a claim looks at.
const defaultPeek = 8

// acquire takes a lane from a task type's pointer index: it reads the first
// peek pointers of each priority, and among the vested ones of the highest
// priority that has any, picks one at random, checks it against its lane
// state and leases it until now+hold. The lease is not written yet
// (PointerLease.unsaved): the caller either hands the lane back in the same
// transaction (releaseLane, one write of the lane state and pointer) or
// keeps it (saveHold). found is false when no pointer was
// vested (or every vested one was stale, and cleared); nextMs is then when
// the earliest pointer seen vests (nowMs when stale ones were cleared and
// the caller should look again, 0 when the index is empty).
//
// Keys: snapshot range reads of S (2, "p", type, prio) (limit peek) for the
// three priorities; a read of the picked lane's state with a read-conflict
// key on it (and likewise for each stale pointer it meets and clears).
func (q *Queue) acquire(tr kv.Transaction, taskType, holder string, peek int, hold time.Duration, short bool, now time.Time) (p PointerLease, found bool, nextMs int64, err error) {
	if peek <= 0 {
		peek = defaultPeek
	}
	nowMs := now.UnixMilli()
	snap := tr.Snapshot()
	var reads [numPriorities]kv.RangeResult
	for i, prio := range priorities {
		reads[i] = snap.GetRange(q.zk.pointersUntil(taskType, prio, -1), kv.RangeOptions{Limit: peek})
	}
	var entries [numPriorities][]pointerEntry
	for i := range priorities {
		kvs, err := reads[i].GetSliceWithError()
		if err != nil {
			return PointerLease{}, false, 0, err
		}
		for _, kvp := range kvs {
			e, perr := q.zk.parsePointer(kvp)
			if perr != nil {
				// A pointer that does not parse names no lane; keep its
				// bytes for an operator and stop paying for it.
				q.opts.Logger.Warn("quick: quarantining a pointer entry that does not decode", "err", perr)
				if err := tr.AddReadConflictKey(kvp.Key); err != nil {
					return PointerLease{}, false, 0, err
				}
				q.quarantineRaw(tr, now, kvp.Key, kvp.Value, perr)
				continue
			}
			if e.PtrMs > nowMs {
				if nextMs == 0 || e.PtrMs < nextMs {
					nextMs = e.PtrMs
				}
				continue
			}
			entries[i] = append(entries[i], e)
		}
	}
	for _, vested := range entries {
		// Pick at random; read only the picked lane's state, and pick
		// again (a round trip each) only when a pointer turns out stale,
		// which is rare: a claim so reads one lane state, not K.
		for len(vested) > 0 {
			i := rand.IntN(len(vested))
			e := vested[i]
			vested[i] = vested[len(vested)-1]
			vested = vested[:len(vested)-1]
			l := e.lane()
			v, err := snap.Get(l.stateKey()).Get()
			if err != nil {
				return PointerLease{}, false, 0, err
			}
			// A missing or undecodable lane state is rebuilt from the
			// pointer (the lane may hold jobs; if not, the claim finds it
			// empty and removes both). A lane state that names another
			// pointer makes this one stale.
			old := laneState{PtrMs: e.PtrMs}
			if v != nil {
				var got laneState
				if got.unmarshal(v) == nil {
					old = got
				}
			}
			if err := tr.AddReadConflictKey(l.stateKey()); err != nil {
				return PointerLease{}, false, 0, err
			}
			if old.PtrMs != e.PtrMs {
				tr.Clear(e.key)
				nextMs = nowMs
				continue
			}
			deadline := now.Add(hold).Truncate(time.Millisecond)
			var lapsedShort uint64
			if old.leased() && old.Short {
				lapsedShort = old.Token
			}
			return PointerLease{
				TaskType: taskType, ItemSpace: l.z.itemSpace, Priority: l.prio, Lane: l.lane,
				Deadline: deadline, Holder: holder, Lapsed: old.leased(), Short: short,
				lane: l, token: newToken(), unsaved: true, fromMs: e.PtrMs, lapsedShort: lapsedShort,
			}, true, 0, nil
		}
	}
	return PointerLease{}, false, nextMs, nil
}

// saveHold writes the lease acquire took (the lane state with its token,
// the pointer at its deadline), when the claim keeps the lane.
func (q *Queue) saveHold(tr kv.Transaction, p *PointerLease) {
	if !p.unsaved {
		return
	}
	q.movePointer(tr, p.lane, p.fromMs, laneState{PtrMs: p.Deadline.UnixMilli(), Token: p.token, Holder: p.Holder, Short: p.Short})
	p.unsaved = false
}

// checkHold reads p's lane state serializably and returns it, or an error
// wrapping ErrPointerLost when another lease holds the lane or it was
// handed back. It conflicts only with writes of the lane state: a takeover,
// not the enqueues into a leased lane (cover writes nothing then).
func (q *Queue) checkHold(tr kv.Transaction, p *PointerLease) (laneState, error) {
	v, err := tr.Get(p.lane.stateKey()).Get()
	if err != nil {
		return laneState{}, err
	}
	var s laneState
	if v == nil || s.unmarshal(v) != nil || s.Token != p.token {
		return laneState{}, fmt.Errorf("%w: %s", ErrPointerLost, p.lane)
	}
	return s, nil
}

// releaseLane hands a held lane back in tr. nextMs is when the lane next
// has work after tr's own writes: the vesting time of its earliest key,
// nowMs when it still has vested jobs, or -1 when it holds no key, which
// removes its lane state and pointer. readBefore bounds the lane keys tr
// has seen (through a snapshot) before nextMs: when nextMs is in the future
// or the lane is removed, they get a read-conflict range, so an enqueue
// that placed a job there since makes tr conflict and retry rather than
// hand the lane back past it. nil means the whole lane.
//
// Keys: a read-conflict range on Z (0, prio, lane) up to readBefore; writes
// or clears Z (1, prio, lane) and moves or clears the pointer.
func (q *Queue) releaseLane(tr kv.Transaction, p *PointerLease, nextMs int64, readBefore []byte) error {
	// A pointer handed back vested (a lane with vested jobs left) strands
	// nothing an enqueue adds meanwhile: any claim of it sees the lane.
	// Only a pointer pushed into the future, or removed, must conflict
	// with the enqueues it would pass over; so a busy lane's hand-backs do
	// not conflict with the enqueues streaming into it.
	if nextMs < 0 || nextMs > q.Now().UnixMilli() {
		r := p.lane.laneRange()
		if readBefore != nil {
			r.End = readBefore
		}
		if err := tr.AddReadConflictRange(r); err != nil {
			return err
		}
	}
	old := p.Deadline.UnixMilli()
	if p.unsaved {
		old, p.unsaved = p.fromMs, false
	}
	if nextMs < 0 {
		tr.Clear(q.pointerKeyOf(p.lane, old))
		tr.Clear(p.lane.stateKey())
		if p.Short {
			tr.Clear(p.lane.handoutKey()) // zshort.go: a removed lane keeps no mark
		}
		return nil
	}
	q.movePointer(tr, p.lane, old, laneState{PtrMs: nextMs})
	return nil
}

// laneFirst reads the earliest job key of a lane (snapshot): its key and
// vesting time, or nil when the lane is empty. A key that does not parse
// counts as vested now, so that a claim comes to quarantine it.
func (q *Queue) laneFirst(tr kv.Transaction, l laneRef, nowMs int64) ([]byte, int64, error) {
	kvs, err := tr.Snapshot().GetRange(l.laneRange(), kv.RangeOptions{Limit: 1}).GetSliceWithError()
	if err != nil || len(kvs) == 0 {
		return nil, -1, err
	}
	jk, perr := l.z.parseJobKey(kvs[0].Key)
	if perr != nil {
		return kvs[0].Key, nowMs, nil
	}
	return kvs[0].Key, jk.VestMs, nil
}

// ReleasePointer hands a leased lane back before its lease ends: its
// pointer moves to when the lane next has work (now if it has vested jobs),
// or is removed with the lane state when the lane is empty. A lease already
// lost returns an error wrapping ErrPointerLost and changes nothing. In
// short-job mode, move the jobs still running to leases of their own first
// (their keys would vest again at once).
//
// Keys: reads Z (1, prio, lane) (serializable) and the lane's first key;
// a read-conflict range over the lane up to it; writes the lane state and
// the pointer.
func (q *Queue) ReleasePointer(ctx context.Context, p PointerLease) error {
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		if _, err := q.checkHold(tr, &p); err != nil {
			if maybeCommitted && IsPointerLost(err) {
				return nil // this call's earlier attempt handed it back
			}
			return err
		}
		nowMs := q.Now().UnixMilli()
		key, vestMs, err := q.laneFirst(tr, p.lane, nowMs)
		if err != nil {
			return err
		}
		if key == nil {
			return q.releaseLane(tr, &p, -1, nil)
		}
		return q.releaseLane(tr, &p, max(vestMs, nowMs), key)
	})
	if err != nil {
		return fmt.Errorf("quick: release lane %s: %w", p.lane, err)
	}
	return nil
}

// IsPointerLost reports whether err means a lane lease was lost.
func IsPointerLost(err error) bool { return errors.Is(err, ErrPointerLost) }
