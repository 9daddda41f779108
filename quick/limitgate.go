package quick

import (
	"fmt"
	"math"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Enforcing tenant limits in the claim's transaction (limits.go has what
// they are; docs/design.md, "Tenant limits", the choices and their cost).
//
// A gated tenant (one with a concurrency or rate limit) has a limit state,
// next to the limits:
//
//	S (1, "ts", type, itemSpace, "n")              running slots (atomic add, int64 LE)
//	S (1, "ts", type, itemSpace, "r", expMs, id)   one slot per job leased under a concurrency limit,
//	                                                keyed by its lease's deadline (empty value)
//	S (1, "ts", type, itemSpace, "b")              rate: the theoretical arrival time (GCRA), µs
//	S (1, "ts", type, itemSpace, "p", prio, lane)  a lane parked at its concurrency limit (value: ms)
//
// A claim of a gated tenant reads the count, the first few slots (the
// earliest deadlines) and the rate state: O(1) keys, never the tenant's
// jobs. Slots whose deadline has passed are freed there (at most
// gateReclaim a claim): a holder that died gives its slot back when its
// lease lapses, as its job vests again. Acks free their slot at once;
// renewals move it to the new deadline. When nothing may start, the lane
// is parked: its pointer moves to when the tenant may start again
// (laneState.Parked keeps enqueues from pulling it back), so claimers do
// not come back to it until then; an ack that frees a slot wakes a parked
// lane.

const (
	// gateReclaim is how many lapsed slots a claim frees at most.
	gateReclaim = 8
	// parkMaxMs bounds how long a lane stays parked: a limit raised, or a
	// wake-up lost, is seen within it.
	parkMaxMs = 5000
	// wakeLanes is how many parked lanes an ack transaction wakes per
	// tenant that freed a slot.
	wakeLanes = 2
)

// limitState is S (1, "ts", type, itemSpace).
func (k keys) limitState(taskType, itemSpace string) tuple.Subspace {
	return k.root.Sub("ts", taskType, itemSpace)
}

func runningKey(st tuple.Subspace) []byte { return st.Pack(tuple.Tuple{"n"}) }
func rateKey(st tuple.Subspace) []byte    { return st.Pack(tuple.Tuple{"b"}) }
func slotKey(st tuple.Subspace, expMs int64, id ID) []byte {
	return st.Pack(tuple.Tuple{"r", expMs, tuple.UUID(id)})
}
func slotsRange(st tuple.Subspace) kv.KeyRange { return rangeOf(st.Sub("r")) }
func parkKey(st tuple.Subspace, prio Priority, lane int) []byte {
	return st.Pack(tuple.Tuple{"p", int64(prio), int64(lane)})
}
func parksRange(st tuple.Subspace) kv.KeyRange { return rangeOf(st.Sub("p")) }

// cachedView is this process's view of a task type's limits, as Claim last
// refreshed it (nil: none read, which limits nothing).
func (q *Queue) cachedView(taskType string) *limitsView {
	if v, ok := q.limits.Load(taskType); ok {
		return v.(*limitsView)
	}
	return nil
}

// effectiveLimits returns the limits of l's tenant: from the view, or, for
// a tenant a partial view does not hold, read (snapshot) in tr.
//
// Keys: with a partial view only, a snapshot read of S (1, "tl", type,
// itemSpace).
func (q *Queue) effectiveLimits(tr kv.Transaction, v *limitsView, l laneRef) (Limits, error) {
	if v.none() {
		return Limits{}, nil
	}
	lim, ok := v.known(l.z.itemSpace)
	if ok {
		return lim, nil
	}
	b, err := tr.Snapshot().Get(q.k.tenantLimitKey(l.z.taskType, l.z.itemSpace)).Get()
	if err != nil || b == nil {
		return v.def, err
	}
	var o Limits
	if o.unmarshal(b) != nil {
		return v.def, nil
	}
	return o.over(v.def), nil
}

// gate is one claim's check of a tenant's limits.
type gate struct {
	lim       Limits
	itemSpace string
	st        tuple.Subspace
	n         kv.Future[[]byte] // running slots, serializable
	slots     kv.RangeResult    // the earliest slots, snapshot
	tat       kv.Future[[]byte] // rate state, serializable

	// set by decide
	running    int64
	reclaimed  int
	tatUs      int64
	allow      int
	eligibleMs int64
	concBlock  bool
	nextExp    int64 // the earliest slot deadline after now read, -1 if none
}

// gateRead issues the reads of a gated tenant's limit state; nil when the
// tenant is not gated.
//
// Keys: with a concurrency limit, a read of S (1, "ts", type, itemSpace,
// "n") (serializable: claims of the tenant, and the acks that free its
// slots, conflict) and a snapshot range read of its first gateReclaim+1
// slots; with a rate, a read of its rate state (serializable).
func (q *Queue) gateRead(tr kv.Transaction, lim Limits, l laneRef) *gate {
	if !lim.gated() {
		return nil
	}
	g := &gate{lim: lim, itemSpace: l.z.itemSpace, st: q.k.limitState(l.z.taskType, l.z.itemSpace)}
	if lim.concurrency() > 0 && !mutant.On("quick.limit-concurrency") {
		g.n = tr.Get(runningKey(g.st))
		g.slots = tr.Snapshot().GetRange(slotsRange(g.st), kv.RangeOptions{Limit: gateReclaim + 1})
	}
	if lim.rate() > 0 && !mutant.On("quick.limit-rate") {
		g.tat = tr.Get(rateKey(g.st))
	}
	return g
}

// rateIntervalUs is the time one start takes of a rate limit, in µs.
func (g *gate) rateIntervalUs() float64 { return 1e6 / g.lim.rate() }

// decide frees the tenant's lapsed slots and sets allow: how many jobs the
// claim may start (at most want), and, when none, eligibleMs: when the
// tenant may start one again.
//
// Keys: clears each lapsed slot freed (with a read-conflict key on it, so
// that a renewal that moves it meanwhile conflicts).
func (g *gate) decide(tr kv.Transaction, want int, now time.Time) error {
	nowMs := now.UnixMilli()
	g.allow = want
	var blockedUntil int64
	if g.n != nil {
		v, err := g.n.Get()
		if err != nil {
			return err
		}
		g.running = max(readLE64(v), 0)
		kvs, err := g.slots.GetSliceWithError()
		if err != nil {
			return err
		}
		next := int64(-1) // the earliest deadline still to come
		defer func() { g.nextExp = next }()
		for _, p := range kvs {
			t, perr := g.st.Unpack(p.Key)
			var expMs int64
			ok := perr == nil && len(t) == 3
			if ok {
				expMs, ok = t[1].(int64)
			}
			if ok && expMs > nowMs {
				next = expMs
				break
			}
			if g.reclaimed == gateReclaim || mutant.On("quick.limit-reclaim") {
				break
			}
			// Its lease lapsed (or the key does not parse): the job vests
			// again, and another claim takes it with a slot of its own.
			if err := tr.AddReadConflictKey(p.Key); err != nil {
				return err
			}
			tr.Clear(p.Key)
			g.reclaimed++
		}
		g.running = max(g.running-int64(g.reclaimed), 0)
		free := int64(g.lim.concurrency()) - g.running
		if free <= 0 {
			g.allow, g.concBlock = 0, true
			blockedUntil = nowMs + parkMaxMs
			if next > nowMs {
				blockedUntil = min(blockedUntil, next)
			}
		} else {
			g.allow = int(min(int64(g.allow), free))
		}
	}
	if g.tat != nil {
		v, err := g.tat.Get()
		if err != nil {
			return err
		}
		nowUs := now.UnixMicro()
		g.tatUs = max(readLE64(v), nowUs)
		t := g.rateIntervalUs()
		b := float64(g.lim.burst())
		// GCRA: n starts fit while tat + n·T stays within now + burst·T.
		n := math.Floor((float64(nowUs) + b*t - float64(g.tatUs)) / t)
		if n < 1 {
			g.allow = 0
			untilUs := float64(g.tatUs) + t - b*t
			blockedUntil = max(blockedUntil, int64(math.Ceil(untilUs/1000)))
		} else if n < float64(g.allow) {
			g.allow = int(n)
		}
	}
	if g.allow == 0 {
		g.eligibleMs = min(max(blockedUntil, nowMs+1), nowMs+parkMaxMs)
	}
	return nil
}

// blockedAfter reports whether the tenant may start nothing more once the
// claim has started n jobs, and if so sets eligibleMs (and concBlock) as
// decide does.
func (g *gate) blockedAfter(n int, now time.Time) bool {
	nowMs := now.UnixMilli()
	var until int64
	blocked := false
	if g.n != nil && g.running+int64(n) >= int64(g.lim.concurrency()) {
		blocked, g.concBlock = true, true
		until = nowMs + parkMaxMs
		if g.nextExp > nowMs {
			until = min(until, g.nextExp)
		}
	}
	if g.tat != nil {
		t := g.rateIntervalUs()
		tat := float64(g.tatUs) + math.Ceil(float64(n)*t)
		b := float64(g.lim.burst())
		if math.Floor((float64(now.UnixMicro())+b*t-tat)/t) < 1 {
			blocked = true
			until = max(until, int64(math.Ceil((tat+t-b*t)/1000)))
		}
	}
	if blocked {
		g.eligibleMs = min(max(until, nowMs+1), nowMs+parkMaxMs)
	}
	return blocked
}

// commit writes what the claim started: a slot per per-job lease taken
// under a concurrency limit (the leases are marked, so their acks and
// renewals find it), the running count, the rate state.
//
// Keys: sets S (1, "ts", type, itemSpace, "r", deadline, id) per job;
// atomic add to "n"; sets "b".
func (g *gate) commit(tr kv.Transaction, jobs []Lease) {
	if g == nil {
		return
	}
	if g.n != nil {
		for _, l := range jobs {
			if l.zl == nil || l.zl.ptr != nil {
				continue // short hand-outs are not gated by concurrency (claimZoneTx)
			}
			tr.Set(slotKey(g.st, l.zl.vestMs, l.ID), nil)
			l.zl.slot = true
		}
		if d := int64(len(jobs) - g.reclaimed); d != 0 {
			tr.Add(runningKey(g.st), le64(d))
		}
	}
	if g.tat != nil && len(jobs) > 0 {
		tr.Set(rateKey(g.st), le64(g.tatUs+int64(math.Ceil(float64(len(jobs))*g.rateIntervalUs()))))
	}
}

// park moves the lane p holds to when its tenant may start a job again
// (g.eligibleMs), marked Parked so that enqueues leave it there; at a
// concurrency limit it also notes the lane, for the ack that frees a slot
// to wake it.
//
// Keys: writes Z (1, prio, lane) and moves the pointer; sets S (1, "ts",
// type, itemSpace, "p", prio, lane) at a concurrency limit.
func (q *Queue) park(tr kv.Transaction, p *LaneLease, g *gate) {
	old := p.Deadline.UnixMilli()
	if p.unsaved {
		old, p.unsaved = p.fromMs, false
	}
	s := laneState{PtrMs: g.eligibleMs, Parked: !mutant.On("quick.limit-park")}
	q.movePointer(tr, p.lane, old, s)
	if g.concBlock {
		tr.Set(parkKey(g.st, p.lane.prio, p.lane.lane), le64(g.eligibleMs))
	}
}

// pickIndex picks one of the vested pointers a claim may take: at random,
// and, when the task type's tenants have different weights, each tenant
// with a chance in proportion to its weight (its lanes among those seen
// share it).
func (q *Queue) pickIndex(v *limitsView, vested []pointerEntry) int {
	if len(vested) < 2 || v == nil || !v.weighted || mutant.On("quick.limit-weight") {
		return int(q.randUint64() % uint64(len(vested)))
	}
	count := make(map[string]int, len(vested))
	for _, e := range vested {
		count[e.Value.ItemSpace]++
	}
	ws := make([]float64, len(vested))
	total := 0.0
	for i, e := range vested {
		w := 1
		if lim, ok := v.known(e.Value.ItemSpace); ok {
			w = lim.weight()
		}
		ws[i] = float64(w) / float64(count[e.Value.ItemSpace])
		total += ws[i]
	}
	r := float64(q.randUint64()>>11) / (1 << 53) * total
	for i, w := range ws {
		if r < w {
			return i
		}
		r -= w
	}
	return len(vested) - 1
}

// slotAcks frees the slots of the acks of leases claimed under a
// concurrency limit (zackTx), and wakes the tenant's parked lanes.
type slotAcks struct {
	slots []kv.Future[[]byte] // per ack: its slot (nil: none)
	freed map[string]*slotFree
}

type slotFree struct {
	st    tuple.Subspace
	l     laneRef // a lane of the tenant: its zone names the others
	n     int
	parks kv.RangeResult
}

// read issues the reads of the acks' slots (serializable: a claim that
// frees a lapsed slot, or a renewal that moves it, conflicts) and of their
// tenants' parked lanes (snapshot).
func (sa *slotAcks) read(q *Queue, tr kv.Transaction, acks []plannedAck) {
	for i, a := range acks {
		zl := a.Lease.zl
		if !zl.slot {
			continue
		}
		if sa.slots == nil {
			sa.slots = make([]kv.Future[[]byte], len(acks))
			sa.freed = map[string]*slotFree{}
		}
		st := q.k.limitState(zl.lane.z.taskType, zl.lane.z.itemSpace)
		sa.slots[i] = tr.Get(slotKey(st, zl.vestMs, a.Lease.ID))
		k := string(st.Bytes())
		if _, ok := sa.freed[k]; !ok {
			sa.freed[k] = &slotFree{st: st, l: zl.lane, parks: tr.Snapshot().GetRange(parksRange(st), kv.RangeOptions{Limit: wakeLanes})}
		}
	}
}

// held frees the slot of ack i, whose lease was held: unless a claim freed
// it already (its lease lapsed), its key is cleared and counted.
func (sa *slotAcks) held(q *Queue, tr kv.Transaction, i int, a plannedAck) error {
	if sa.slots == nil || sa.slots[i] == nil {
		return nil
	}
	v, err := sa.slots[i].Get()
	if err != nil || v == nil {
		return err
	}
	zl := a.Lease.zl
	st := q.k.limitState(zl.lane.z.taskType, zl.lane.z.itemSpace)
	tr.Clear(slotKey(st, zl.vestMs, a.Lease.ID))
	sa.freed[string(st.Bytes())].n++
	return nil
}

// finish writes the freed counts and wakes up to wakeLanes parked lanes of
// each tenant that freed a slot: their pointers move to now.
//
// Keys: atomic add to S (1, "ts", type, itemSpace, "n"); per parked lane
// woken, reads its lane state (serializable), moves its pointer and clears
// its park key; then a read of the task type's sleep key S (1, "sleep",
// type) (serializable) and, when a worker sleeps, an atomic add to its wake
// key S (1, "wake", type).
func (sa *slotAcks) finish(q *Queue, tr kv.Transaction, nowMs int64) error {
	type wake struct {
		key []byte
		l   laneRef
		s   kv.Future[[]byte]
	}
	var wakes []wake
	for _, f := range sa.freed {
		if f.n == 0 {
			// Nothing freed: the parked lanes' read was not needed.
			if _, err := f.parks.GetSliceWithError(); err != nil {
				return err
			}
			continue
		}
		tr.Add(runningKey(f.st), le64(-int64(f.n)))
		kvs, err := f.parks.GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs[:min(len(kvs), f.n)] {
			t, err := f.st.Unpack(p.Key)
			if err != nil || len(t) != 3 {
				tr.Clear(p.Key)
				continue
			}
			prio, ok1 := t[1].(int64)
			lane, ok2 := t[2].(int64)
			if !ok1 || !ok2 || lane < 0 || lane > maxZoneLanes {
				tr.Clear(p.Key)
				continue
			}
			l := laneRef{z: f.l.z, prio: Priority(prio), lane: int(lane)}
			wakes = append(wakes, wake{key: p.Key, l: l, s: tr.Get(l.stateKey())})
		}
	}
	// Idle workers of the task type sleep until the parked pointer's time:
	// wake them as an enqueue does (internal/wake), read beside the lane
	// states (serializable, as enqueue's: a worker going to sleep meanwhile
	// makes this ack retry and wake it).
	sleepers := map[string]kv.Future[[]byte]{}
	if !q.opts.DisableWakeOnEnqueue {
		for _, w := range wakes {
			if t := w.l.z.taskType; sleepers[t] == nil {
				sleepers[t] = tr.Get(q.k.sleepKey(t))
			}
		}
	}
	woken := map[string]bool{}
	for _, w := range wakes {
		tr.Clear(w.key)
		v, err := w.s.Get()
		if err != nil {
			return err
		}
		var s laneState
		if v == nil || s.unmarshal(v) != nil || !s.Parked || s.leased() {
			continue // taken, handed back or removed since: nothing parked
		}
		q.movePointer(tr, w.l, s.PtrMs, laneState{PtrMs: nowMs})
		t := w.l.z.taskType
		if f := sleepers[t]; f != nil && !woken[t] {
			sv, err := f.Get()
			if err != nil {
				return err
			}
			woken[t] = true
			if readLE64(sv) > nowMs {
				tr.Add(q.k.wakeKey(t), le64(1))
			}
		}
	}
	return nil
}

// slotMoves moves the slots of renewed leases to their new deadlines
// (zextendMany, zcheckpoint).
type slotMoves struct {
	slots []kv.Future[[]byte]
}

// read issues the reads of the leases' slots (serializable).
func (sm *slotMoves) read(q *Queue, tr kv.Transaction, ls []Lease) {
	for i, l := range ls {
		if l.zl == nil || !l.zl.slot {
			continue
		}
		if sm.slots == nil {
			sm.slots = make([]kv.Future[[]byte], len(ls))
		}
		sm.slots[i] = tr.Get(slotKey(q.k.limitState(l.TaskType, l.ItemSpace), l.zl.vestMs, l.ID))
	}
}

// moved moves the slot of lease i (held, renewed until deadlineMs): its
// key follows the lease; a slot a claim freed meanwhile (the lease had
// lapsed, and nobody took the job) is taken again, over the limit if need
// be, since the job runs.
//
// Keys: clears the old slot and sets the new one; an atomic add to "n"
// when the slot was freed.
func (sm *slotMoves) moved(q *Queue, tr kv.Transaction, i int, l Lease, deadlineMs int64) error {
	if sm.slots == nil || sm.slots[i] == nil || mutant.On("quick.limit-extend") {
		return nil
	}
	v, err := sm.slots[i].Get()
	if err != nil {
		return err
	}
	st := q.k.limitState(l.TaskType, l.ItemSpace)
	if v == nil {
		tr.Add(runningKey(st), le64(1))
	} else if l.zl.vestMs != deadlineMs {
		tr.Clear(slotKey(st, l.zl.vestMs, l.ID))
	}
	tr.Set(slotKey(st, deadlineMs, l.ID), nil)
	return nil
}

// errGated wraps a claim's limit errors.
func errGated(itemSpace string, err error) error {
	return fmt.Errorf("limits of tenant %q: %w", itemSpace, err)
}
