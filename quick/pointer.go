package quick

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// The pointer index and the lane states: the primitives every
// operation shares (zone.go states the invariant they keep).

// pointerValueOf is the value of a lane's pointer entry.
func pointerValueOf(l laneRef) []byte {
	pv := pointerValue{Zone: l.z.space.Bytes(), ItemSpace: l.z.itemSpace}
	return pv.marshal()
}

func (q *Queue) pointerKeyOf(l laneRef, ptrMs int64) []byte {
	return q.zk.pointerKey(l.z.taskType, l.prio, ptrMs, l.z.hash, l.lane)
}

// pointerBucketMs is the pointer index's time grain for new vested work: a
// pointer written already vested for a lane that had none (an enqueue for
// now, a chunk of a split) is filed with the other new work of its second,
// in random (hash) order; a pointer written for the future (a delayed job, a
// lease deadline) is filed at its exact ms, and a lane handed back with
// vested jobs left at the ms of the hand-back (handBackMs). Claims take the
// oldest entries first, and start at a random place among the new work of
// one second (acquire): docs/design.md, "Choosing a pointer".
const pointerBucketMs = 1000

// pointerMs is where a pointer wanted at vestMs is filed when written at
// nowMs: vestMs itself when it is in the future, so that every entry filed
// at or before now is vested and the first one not yet vested is the
// index's next vesting time; else freshMs(vestMs), which is earlier than
// vestMs (the invariant in zone.go holds).
func pointerMs(vestMs, nowMs int64) int64 {
	if vestMs > nowMs {
		return vestMs
	}
	return freshMs(vestMs)
}

// freshMs is where new work vesting at vestMs is filed: the last ms of the
// second before vestMs's, the one ms in each second that no hand-back uses
// (handBackMs). Every lane that gets work in second s is so filed ahead of
// every lane handed back during s, which is filed at the hand-back's own
// ms, at or after s: a lane handed back never comes back before a lane that
// was waiting when it was taken, whatever the clock reads (a frozen clock
// included) and however fast claims run.
func freshMs(vestMs int64) int64 { return bucketOf(vestMs) - 1 }

// isFreshMs reports whether ms is a second's new-work ms (freshMs).
func isFreshMs(ms int64) bool { return ms == freshMs(ms+1) }

// handBackMs is where a lane handed back at nowMs with vested jobs left is
// filed: at nowMs, behind every pointer already filed at an earlier ms, or
// the ms before when nowMs is a new-work ms, which belongs to the new work
// of the next second (filed later, so behind this hand-back).
//
// The mutant quick.handback-order files it with the new work of its second
// instead, as the index did before (issue 22, item 6): the lane then comes
// back again and again while that second is the oldest.
func handBackMs(nowMs int64) int64 {
	if mutant.On("quick.handback-order") {
		return freshMs(nowMs)
	}
	if mutant.On("quick.handback-pool") {
		return bucketOf(nowMs) // the second's hand-backs pooled in random order
	}
	if isFreshMs(nowMs) {
		return nowMs - 1
	}
	return nowMs
}

// nextFreshMs is the first new-work ms at or after ms.
func nextFreshMs(ms int64) int64 { return freshMs(ms+1) + pointerBucketMs }

// bucketOf is the start of the pointerBucketMs bucket holding ms.
func bucketOf(ms int64) int64 {
	b := ms / pointerBucketMs * pointerBucketMs
	if b > ms {
		b -= pointerBucketMs // ms < 0
	}
	return b
}

// movePointer moves a lane's pointer entry from oldMs to s.PtrMs and stores
// the lane state s. oldMs < 0: no entry yet. An unleased pointer is filed
// by pointerMs (a lease keeps its exact deadline, which its holder and the
// takeover compare).
func (q *Queue) movePointer(tr kv.Transaction, l laneRef, oldMs int64, s laneState) {
	if !s.leased() {
		nowMs := q.Now().UnixMilli()
		s.Vested = s.PtrMs <= nowMs
		s.PtrMs = pointerMs(s.PtrMs, nowMs)
	}
	q.movePointerTo(tr, l, oldMs, s)
}

// movePointerTo is movePointer with s.PtrMs taken as it is.
func (q *Queue) movePointerTo(tr kv.Transaction, l laneRef, oldMs int64, s laneState) {
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
	// backlogged is set by applyCover when the lane's pointer, not leased,
	// had vested at least zoneStaleMs before: no claim took the lane in
	// that time (lanestate.go, growth at enqueue).
	backlogged bool
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
// A lane state is never trusted alone (issue 22, item 3): where it would
// leave the pointer as it is, cover reads the pointer it names (snapshot:
// the state, read serializably, changes with it), and a state without its
// pointer (a tenant's subspace copied or restored without the queue's
// pointer index) gets it back, so the lane's jobs, old and new, are
// reachable again.
//
// Keys: reads Z (1, prio, lane) of each lane (serializable) and, where the
// state is kept, its pointer S (2, "p", ...) (snapshot); writes the state
// and S (2, "p", ...) only for a lane that had no pointer or whose unleased
// pointer is in the future, later than the new job.
func (q *Queue) applyCover(tr kv.Transaction, c *coverer, nowMs int64) error {
	c.read(tr)
	type kept struct {
		it  *coverItem
		s   laneState
		ptr kv.Future[[]byte]
	}
	var keep []kept
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
		case s.leased(), s.PtrMs <= it.vestMs, s.PtrMs <= nowMs, s.Vested && !mutant.On("quick.cover-pulls-vested"), s.Parked:
			// A live lease's holder reads the lane before handing it
			// back; a lapsed one's pointer (at its deadline) has vested.
			// An unleased pointer that vests by the new job, or has vested
			// already (by this clock, or filed vested by the writer's,
			// which may read a little ahead: laneState.Vested), is reached
			// by a claim. A vested pointer is not pulled earlier even for a
			// job that vests before it (one whose time was fixed before a
			// retry, or given in the past): it waits where it was filed,
			// behind the lanes that were waiting before it (a lane handed
			// back would otherwise jump among its second's new work), and
			// the enqueue writes nothing a claim reads (0.2 conflicts per
			// claim at one worker in steady mode when it did). A parked
			// pointer waits for its tenant's limits (limitgate.go). Either
			// way the pointer stays, if it is there.
			keep = append(keep, kept{it: it, s: s, ptr: tr.Snapshot().Get(q.pointerKeyOf(it.l, s.PtrMs))})
		default:
			old := s.PtrMs
			s.PtrMs = it.vestMs
			q.movePointer(tr, it.l, old, s)
		}
	}
	for _, k := range keep {
		v, err := k.ptr.Get()
		if err != nil {
			return err
		}
		if v == nil && !mutant.On("quick.cover-pointer") {
			q.opts.Logger.Warn("quick: a lane state without its pointer; writing the pointer", "lane", k.it.l.String())
			s := k.s
			if !s.leased() {
				s.PtrMs = min(s.PtrMs, k.it.vestMs)
			}
			q.movePointer(tr, k.it.l, -1, s)
			continue
		}
		if !k.s.leased() {
			k.it.backlogged = k.s.PtrMs <= nowMs-zoneStaleMs
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

// peekBucket is what this process's claims last saw at the head of one
// task type and priority's pointer index: the ms of the oldest vested
// entries, where the next claim starts its random read in the same round
// trip as the read of the head; peekFuture when nothing was vested (or
// nothing was read yet), and the next claim guesses the current second's
// new-work ms, where work that arrives in an idle queue is filed; peekEmpty when the index was empty,
// and the next claim reads only the head (an idle worker pays nothing more).
type peekBucket struct{ ms atomic.Int64 }

const (
	peekFuture = -1
	peekEmpty  = -2
)

func (q *Queue) peekBucketOf(taskType string, prio Priority) *peekBucket {
	k := peekKey{taskType, prio}
	if v, ok := q.peekFrom.Load(k); ok {
		return v.(*peekBucket)
	}
	b := &peekBucket{}
	b.ms.Store(peekFuture)
	v, _ := q.peekFrom.LoadOrStore(k, b)
	return v.(*peekBucket)
}

type peekKey struct {
	taskType string
	prio     Priority
}

// peekRead is one priority's reads of the pointer index.
type peekRead struct {
	head   kv.RangeResult
	rnd    kv.RangeResult // nil: no random read
	rndAt  int64          // the bucket rnd reads
	check  bool           // the head was read only to check rndAt (limit 1)
	bucket *peekBucket
	// headPick are the head's pickable entries, kept for a scan (more).
	headPick []pointerEntry
}

// extra is r's head entries that are not among got (a scan's other end).
func (r *peekRead) extra(got []pointerEntry) []pointerEntry {
	var out []pointerEntry
	for _, e := range r.headPick {
		dup := false
		for _, g := range got {
			if string(g.key) == string(e.key) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out
}

// acquire takes a lane from a task type's pointer index, picks it among the
// oldest vested pointers at random, checks it against its lane state and
// leases it until now+hold. The lease is not written yet
// (LaneLease.unsaved): the caller either hands the lane back in the same
// transaction (releaseLane, one write of the lane state and pointer) or
// keeps it (saveHold). found is false when no pointer was vested (or every
// vested one was stale, and cleared); nextMs is then when the earliest
// pointer vests (nowMs when stale ones were cleared and the caller should
// look again, 0 when the index is empty).
//
// Where it reads (docs/design.md, "Choosing a pointer"): every entry filed
// at or before now is vested (pointerMs, handBackMs), so the index's first
// entry says whether anything is vested and where the oldest entries are
// (m0). All claimers reading the same first K entries would collide with a
// chance of about (claims in flight − 1)/K; so a claim also reads K entries
// from a random lane hash where this process's claims last found the
// oldest entries, and picks among those of them that are pickable: at m0
// when m0 is a second's new work (freshMs), else from m0 up to the next
// new-work ms, never an entry filed after new work that waits (the
// fairness invariant). It falls back on the index's head when that read
// holds nothing pickable (its start fell after the last one). Both reads
// share one round trip; when the head shows the oldest entries moved
// elsewhere, a second round trip reads at m0 (once per second's new work
// and process: a read that started before a hand-back's m0 read the
// oldest entries anyway). Without a place seen (an idle worker, or head
// set), the claim reads the head's first K and picks among them.
//
// Keys: per priority, a snapshot range read of S (2, "p", type, prio) from
// its start (limit 1 with a random read, else peek) and one from the
// random place (limit peek); a read of the picked lane's state
// with a read-conflict key on it (and likewise for each stale pointer it
// meets and clears). Claim (acquireWith) issues its read of the first
// picked lane beside that lane's state, so that a claim reads the index,
// then the lane: two round trips.
func (q *Queue) acquire(tr kv.Transaction, taskType, holder string, peek int, hold time.Duration, short bool, now time.Time) (p LaneLease, found bool, nextMs int64, err error) {
	return q.acquireFrom(tr, taskType, holder, peek, false, hold, short, now)
}

// acquireFrom is acquire; head reads only the index's head
// (ClaimOptions.PeekHead).
func (q *Queue) acquireFrom(tr kv.Transaction, taskType, holder string, peek int, head bool, hold time.Duration, short bool, now time.Time) (p LaneLease, found bool, nextMs int64, err error) {
	p, found, nextMs, _, err = q.acquireWith(tr, taskType, holder, peek, head, hold, short, now, nil, nil, nil)
	return p, found, nextMs, err
}

// laneRead is a read of a lane's job keys in flight, issued by acquire
// beside the picked lane's state so that the two share one round trip
// instead of following each other (the claim's next read needs nothing the
// state read returns, unless the pointer turns out stale). Snapshot reads
// at the transaction's read version: issued earlier, they return what the
// same reads issued after the state read would, so long as the
// transaction wrote none of the lane's keys in between.
type laneRead struct {
	l     laneRef
	short bool              // read as takeShort reads a fresh lane, else as claimLane does
	rr    kv.RangeResult    // the lane's first keys
	meta  kv.Future[[]byte] // Z (2), for claimLane's growth check (nil in short-job mode)
}

// discard waits for a read that will not be used, so that the read
// counters see what the claim cost.
func (lr *laneRead) discard() error {
	if lr == nil {
		return nil
	}
	if _, err := lr.rr.GetSliceWithError(); err != nil {
		return err
	}
	if lr.meta != nil {
		if _, err := lr.meta.Get(); err != nil {
			return err
		}
	}
	return nil
}

// acquireWith is acquireFrom; pre, when not nil, issues the read of the
// first lane picked, beside its lane state, and acquireWith returns it when
// that lane is the one leased (nil otherwise: the pointer was stale, and a
// later pick's lane is read by the caller, after its state). Only the
// first pick is read ahead, so a claim reads at most one lane more than it
// takes.
//
// sc, when not nil, makes the claim a scan: sc.seen receives the other
// pickable entries the reads saw once a lane is leased (the candidates of
// ClaimOptions.Scan, scan.go), and no lane sc.skip names is picked or seen.
// view, when not nil, returns the task type's tenant limits, whose weights
// shape the pick (pickIndex); it is called once the index is read.
func (q *Queue) acquireWith(tr kv.Transaction, taskType, holder string, peek int, head bool, hold time.Duration, short bool, now time.Time, pre func(laneRef) *laneRead, view func() *limitsView, sc *scanState) (p LaneLease, found bool, nextMs int64, read *laneRead, err error) {
	if peek <= 0 {
		peek = defaultPeek
	}
	// A scan reads the index's head deep, with every vested entry it holds
	// pickable, and takes the zone whose turn it is (scan.go, zone turns).
	scan := sc != nil && !mutant.On("quick.scan-shallow")
	if scan {
		head, peek = true, max(peek, scanDepth)
	}
	nowMs := now.UnixMilli()
	snap := tr.Snapshot()
	var reads [numPriorities]peekRead
	for i, prio := range priorities {
		r := &reads[i]
		headLimit := peek
		if !head {
			r.bucket = q.peekBucketOf(taskType, prio)
			b := r.bucket.ms.Load()
			switch {
			case b >= 0 && b <= nowMs:
				headLimit, r.check = 1, true // the head serves to check where the oldest entries are
				if sc != nil {
					// A scan reads the head's K too: the other end of its
					// circle over the oldest entries (scan.go).
					headLimit = peek
				}
			case b == peekFuture || b > nowMs:
				b = freshMs(nowMs) // a guess: keep the head's K to fall back on
			default:
				b = peekEmpty
			}
			if b >= 0 {
				// A random place among a second's new work; from the first
				// entry of an exact ms (hand-backs, a few a ms, in the order
				// they were handed back): a random start there would skip
				// the oldest half the time, and a lane could wait behind
				// later hand-backs again and again.
				h := int64(math.MinInt64)
				if isFreshMs(b) {
					h = int64(q.randUint64())
				}
				r.rnd, r.rndAt = snap.GetRange(q.zk.pointersFrom(taskType, prio, b, h), kv.RangeOptions{Limit: peek}), b
			}
		}
		r.head = snap.GetRange(q.zk.pointersUntil(taskType, prio, -1), kv.RangeOptions{Limit: headLimit})
	}
	var entries [numPriorities][]pointerEntry
	bad := false
	for i, prio := range priorities {
		r := &reads[i]
		hs, hbad, err := q.peekEntries(tr, r.head, now)
		if err != nil {
			return LaneLease{}, false, 0, nil, err
		}
		bad = bad || hbad
		var first *pointerEntry
		if len(hs) > 0 {
			first = &hs[0]
		}
		if first == nil || first.PtrMs > nowMs {
			if first != nil && (nextMs == 0 || first.PtrMs < nextMs) {
				nextMs = first.PtrMs
			}
			if r.bucket != nil {
				if first == nil && !hbad {
					r.bucket.ms.Store(peekEmpty)
				} else {
					r.bucket.ms.Store(peekFuture)
				}
			}
			if r.rnd != nil {
				// Nothing to pick from it; waited for all the same, so that
				// the read counters see what an idle claim costs.
				if _, err := r.rnd.GetSliceWithError(); err != nil {
					return LaneLease{}, false, 0, nil, err
				}
			}
			continue
		}
		// The oldest entry is at m0. The choice is among the entries from
		// m0 up to the first new-work ms at or after it (pickable): a lane
		// handed back after that new work was filed is behind it, and is
		// not taken before it. When m0 is itself new work, only its own
		// entries, in random order, are the choice.
		m0 := first.PtrMs
		last := min(nowMs, nextFreshMs(m0))
		if isFreshMs(m0) {
			last = m0
		}
		if scan {
			last = nowMs // zone turns order a scan's choice, not the filing time
		}
		pickable := func(e pointerEntry) bool { return e.PtrMs >= m0 && e.PtrMs <= last }
		if sc != nil {
			for _, e := range hs {
				if pickable(e) {
					r.headPick = append(r.headPick, e)
				}
			}
		}
		if r.bucket != nil {
			r.bucket.ms.Store(m0)
		}
		// The random read is of use when it started at m0 itself, or, when
		// m0 is not new work (a lane handed back, a delayed job vested, a
		// lease lapsed: a few entries a ms), anywhere before m0: nothing is
		// filed before m0, so it read the oldest entries from m0 on.
		collect := func(rr kv.RangeResult) error {
			rs, rbad, err := q.peekEntries(tr, rr, now)
			if err != nil {
				return err
			}
			bad = bad || rbad
			for _, e := range rs {
				if pickable(e) {
					entries[i] = append(entries[i], e)
				}
			}
			return nil
		}
		useful := r.rnd != nil && (r.rndAt == m0 || (r.rndAt < m0 && !isFreshMs(m0)))
		if r.rnd != nil {
			var err error
			if useful {
				err = collect(r.rnd)
			} else {
				// Entries filed after the oldest: no choice. Waited for all
				// the same, so that the read counters see what it cost.
				_, err = r.rnd.GetSliceWithError()
			}
			if err != nil {
				return LaneLease{}, false, 0, nil, err
			}
		}
		if len(entries[i]) == 0 && r.check && !(useful && r.rndAt == m0) {
			// The oldest entries moved since this process last looked, and
			// the head was read for the check only: read where they are now
			// (one more round trip, once per second's new work and process:
			// a claim following the hand-backs of one second finds them
			// from where it last looked). After a wrong guess the head's K
			// are there to pick from instead. New work is read from a
			// random place among its entries; hand-backs, a few a ms, from
			// the oldest on.
			h := int64(math.MinInt64)
			if isFreshMs(m0) {
				h = int64(q.randUint64())
			}
			if err := collect(snap.GetRange(q.zk.pointersFrom(taskType, prio, m0, h), kv.RangeOptions{Limit: peek})); err != nil {
				return LaneLease{}, false, 0, nil, err
			}
		}
		if len(entries[i]) == 0 {
			// No random read, or it started after the last pickable entry:
			// wrap around to the head.
			for _, e := range hs {
				if e.PtrMs > nowMs {
					if nextMs == 0 || e.PtrMs < nextMs {
						nextMs = e.PtrMs
					}
					break
				}
				if pickable(e) {
					entries[i] = append(entries[i], e)
				}
			}
		}
	}
	var extra [numPriorities][]pointerEntry
	if sc != nil {
		// A scan's candidates also come from the head's pickable entries
		// that the random read did not cover.
		for i := range reads {
			extra[i] = sc.unskipped(reads[i].extra(entries[i]))
			entries[i] = sc.unskipped(entries[i])
		}
	}
	for pi, vested := range entries {
		// Pick at random; read only the picked lane's state, and pick
		// again (a round trip each) only when a pointer turns out stale,
		// which is rare: a claim so reads one lane state, not K.
		for len(vested) > 0 {
			var lv *limitsView
			if view != nil {
				lv = view()
			}
			var i int
			switch {
			case lv != nil && lv.weighted:
				i = q.pickIndex(lv, vested) // weighed by tenant limits (per tenant)
			case scan:
				i = q.pickByTurn(taskType, vested) // a scan takes each zone once a round (scan.go)
			case sc != nil:
				i = q.pickByZone(vested)
			default:
				i = q.pickIndex(lv, vested)
			}
			e := vested[i]
			vested[i] = vested[len(vested)-1]
			vested = vested[:len(vested)-1]
			l := e.lane()
			sf := snap.Get(l.stateKey())
			var lr *laneRead
			if pre != nil {
				lr, pre = pre(l), nil
			}
			v, err := sf.Get()
			if err != nil {
				return LaneLease{}, false, 0, nil, err
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
				return LaneLease{}, false, 0, nil, err
			}
			if old.PtrMs != e.PtrMs && !mutant.On("quick.stale-pointer") {
				tr.Clear(e.key)
				nextMs = nowMs
				if err := lr.discard(); err != nil {
					return LaneLease{}, false, 0, nil, err
				}
				continue
			}
			deadline := now.Add(hold).Truncate(time.Millisecond)
			var lapsedShort uint64
			if old.leased() && old.Short {
				lapsedShort = old.Token
			}
			if sc != nil {
				sc.seen = append(append(sc.seen, vested...), extra[pi]...)
				for j := pi + 1; j < len(entries); j++ {
					sc.seen = append(append(sc.seen, entries[j]...), extra[j]...)
				}
			}
			return LaneLease{
				TaskType: taskType, ItemSpace: l.z.itemSpace, Priority: l.prio, Lane: l.lane,
				Deadline: deadline, Holder: holder, Lapsed: old.leased(), Short: short,
				lane: l, token: newToken(), unsaved: true, fromMs: e.PtrMs, lapsedShort: lapsedShort,
			}, true, 0, lr, nil
		}
	}
	if bad {
		nextMs = nowMs // what hid behind a quarantined entry is unknown: look again
	}
	return LaneLease{}, false, nextMs, nil, nil
}

// randUint64 is the random source of acquire's choices: Queue.pickRand
// when a test set it, else math/rand/v2.
func (q *Queue) randUint64() uint64 {
	if q.pickRand != nil {
		return q.pickRand()
	}
	return rand.Uint64()
}

// peekEntries parses a pointer range read, quarantining the entries that
// do not parse: they name no lane, and a claim would otherwise meet them
// again and again.
func (q *Queue) peekEntries(tr kv.Transaction, rr kv.RangeResult, now time.Time) (_ []pointerEntry, bad bool, _ error) {
	kvs, err := rr.GetSliceWithError()
	if err != nil {
		return nil, false, err
	}
	out := make([]pointerEntry, 0, len(kvs))
	for _, kvp := range kvs {
		e, perr := q.zk.parsePointer(kvp)
		if perr != nil {
			q.opts.Logger.Warn("quick: quarantining a pointer entry that does not decode", "err", perr)
			if err := tr.AddReadConflictKey(kvp.Key); err != nil {
				return nil, false, err
			}
			q.quarantineRaw(tr, now, kvp.Key, kvp.Value, perr)
			bad = true
			continue
		}
		out = append(out, e)
	}
	return out, bad, nil
}

// saveHold writes the lease acquire took (the lane state with its token,
// the pointer at its deadline), when the claim keeps the lane.
func (q *Queue) saveHold(tr kv.Transaction, p *LaneLease) {
	if !p.unsaved {
		return
	}
	q.movePointer(tr, p.lane, p.fromMs, laneState{PtrMs: p.Deadline.UnixMilli(), Token: p.token, Holder: p.Holder, Short: p.Short})
	p.unsaved = false
}

// checkHold reads p's lane state serializably and returns it, or an error
// wrapping ErrLaneLost when another lease holds the lane or it was
// handed back. It conflicts only with writes of the lane state: a takeover,
// not the enqueues into a leased lane (cover writes nothing then).
func (q *Queue) checkHold(tr kv.Transaction, p *LaneLease) (laneState, error) {
	v, err := tr.Get(p.lane.stateKey()).Get()
	if err != nil {
		return laneState{}, err
	}
	var s laneState
	if v == nil || s.unmarshal(v) != nil || s.Token != p.token {
		return laneState{}, fmt.Errorf("%w: %s", ErrLaneLost, p.lane)
	}
	return s, nil
}

// releaseLane hands a held lane back in tr. nextMs is when the lane next
// has work after tr's own writes: the vesting time of its earliest key,
// nowMs when it still has vested jobs (filed by handBackMs), or -1 when it holds no key, which
// removes its lane state and pointer. readBefore bounds the lane keys tr
// has seen (through a snapshot) before nextMs: when nextMs is in the future
// or the lane is removed, they get a read-conflict range, so an enqueue
// that placed a job there since makes tr conflict and retry rather than
// hand the lane back past it. nil means the whole lane.
//
// Keys: a read-conflict range on Z (0, prio, lane) up to readBefore; writes
// or clears Z (1, prio, lane) and moves or clears the pointer.
func (q *Queue) releaseLane(tr kv.Transaction, p *LaneLease, nextMs int64, readBefore []byte) error {
	// A pointer handed back vested (a lane with vested jobs left) strands
	// nothing an enqueue adds meanwhile: any claim of it sees the lane.
	// Only a pointer pushed into the future, or removed, must conflict
	// with the enqueues it would pass over; so a busy lane's hand-backs do
	// not conflict with the enqueues streaming into it.
	nowMs := q.Now().UnixMilli()
	if nextMs < 0 || nextMs > nowMs {
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
			tr.Clear(p.lane.handoutKey()) // short.go: a removed lane keeps no mark
		}
		return nil
	}
	if nextMs <= nowMs {
		// Behind every lane already waiting (handBackMs): a round of
		// claims visits each waiting lane once before it takes this one
		// again.
		q.movePointerTo(tr, p.lane, old, laneState{PtrMs: handBackMs(nowMs), Vested: true})
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

// ReleaseLane hands a leased lane back before its lease ends: its
// pointer moves to when the lane next has work (now if it has vested jobs),
// or is removed with the lane state when the lane is empty. A lease already
// lost returns an error wrapping ErrLaneLost and changes nothing. In
// short-job mode, move the jobs still running to leases of their own first
// (their keys would vest again at once).
//
// Keys: reads Z (1, prio, lane) (serializable) and the lane's first key;
// a read-conflict range over the lane up to it; writes the lane state and
// the pointer.
func (c *Consumer) ReleaseLane(ctx context.Context, p LaneLease) error {
	q := c.q
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		if _, err := q.checkHold(tr, &p); err != nil {
			if maybeCommitted && IsLaneLost(err) {
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
