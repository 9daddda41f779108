package quick

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// One scanner per consumer process (docs/design.md, "The worker: one
// scanner per runner"). A claim from the pointer index with
// ClaimOptions.Scan also returns the other vested lanes its index read saw
// (Claimed.Candidates), at most one per zone; the process's other claim
// goroutines claim those lanes with ClaimOptions.From, which reads the
// lane's state and keys but not the index. So one goroutine per process
// reads the index, the process's claims in flight are on distinct lanes
// (none of them races another of the same process for a pointer), and a
// round of one scan counts each zone once, however many lanes it has.
//
// Two processes may still go for one lane: a claim From leases the lane
// only when its state still names the pointer the scan saw, vested, with a
// read-conflict key on the state (as acquire does), so of two claims of one
// lane exactly one commits; the other conflicts, and its retry finds the
// lane leased and returns Missed, not an error.

// scanState is a scanning claim's (ClaimOptions.Scan) part of acquire:
// the lanes it must skip, and the other pickable entries its reads saw.
type scanState struct {
	skip map[skipKey]bool
	seen []pointerEntry
}

// skipKey names a lane of the claim's task type.
type skipKey struct {
	itemSpace string
	prio      Priority
	lane      int
}

// maxSkip bounds ClaimOptions.Skip: a worker hands out at most one
// candidate per claim goroutine.
const maxSkip = 64

func newScanState(skip []LaneCandidate) *scanState {
	sc := &scanState{}
	if len(skip) > 0 && !mutant.On("quick.scan-no-skip") {
		sc.skip = make(map[skipKey]bool, min(len(skip), maxSkip))
		for _, c := range skip[:min(len(skip), maxSkip)] {
			sc.skip[skipKey{c.ItemSpace, c.Priority, c.Lane}] = true
		}
	}
	return sc
}

// unskipped returns es without the entries of lanes sc skips (es itself
// when it skips none of them).
func (sc *scanState) unskipped(es []pointerEntry) []pointerEntry {
	if len(sc.skip) == 0 {
		return es
	}
	out := es[:0:0]
	for _, e := range es {
		l := e.lane()
		if !sc.skip[skipKey{l.z.itemSpace, l.prio, l.lane}] {
			out = append(out, e)
		}
	}
	return out
}

// maxScan caps ClaimOptions.Scan; with it, scanDepth bounds the index
// read of a scanning claim (scanPeek): a scan stays one read of a few kB.
const maxScan = 32

// LaneCandidate is a vested lane a claim's index read saw (Claimed.
// Candidates): pass it as ClaimOptions.From to claim that lane without
// reading the index. It is a hint, not a lease: by the time it is claimed
// another claim may have taken it (Claimed.Missed).
type LaneCandidate struct {
	TaskType  string
	ItemSpace string
	Priority  Priority
	Lane      int
	// PtrAt is where the lane's pointer was filed when the scan saw it.
	PtrAt time.Time

	lane  laneRef
	ptrMs int64
}

// scanDepth is how many pointers per priority a scanning claim reads from
// the head of the index: enough to see past every vested lane of one zone
// grown to the default MaxZoneLanes (64), so that a tenant whose lanes were
// all handed back before a small tenant's work arrived does not hide it
// (issue 22: a round counted in lanes gave the hot tenant up to 64 turns
// to a small one's one). It is also the most a scan read before
// (2*(maxScan+1)): a scan stays one range read of a few kB.
const scanDepth = 2 * (maxScan + 1)

// scanPeek is how many pointers per priority a claim reads: ClaimOptions.
// Peek, or, for a scan, scanDepth (acquireWith reads them from the head).
func scanPeek(opts ClaimOptions) int {
	if opts.Scan <= 0 {
		return opts.Peek
	}
	if mutant.On("quick.scan-shallow") {
		return max(opts.Peek, 2*(opts.Scan+1))
	}
	return max(opts.Peek, scanDepth)
}

// Zone turns: a round of a process's scans takes each zone once, counted in
// zones, not lanes. A scan reads the vested head of the index deep
// (scanDepth) and takes, among the zones it saw, the one this process's
// scans took least recently (never taken first; ties by the age of the
// zone's oldest entry), then one of that zone's oldest lanes; its
// candidates follow in the same order, one per zone. A hot zone of many
// lanes so gets one turn per round however many of its lanes wait ahead of
// a small tenant's one, and a small tenant that arrives while it drains is
// taken by the next scan that sees it (scan_fairness_test.go, counted in
// claims; docs/design.md, "Zone turns"). Within a zone the lanes keep the index's
// order, oldest first, but for a random pick among its first turnLanes (as
// every claim picks among the oldest few): scanners of several processes
// reading the same head then rarely go for the same lane.
//
// The turns are this process's memory only (no key): processes do not
// agree on whose turn it is, and need not; each one's scans are fair by
// zone, so their sum is. The memory is bounded: at maxTurns zones it
// starts afresh, which only makes every zone look new once.

// turnLanes is how many of a zone's oldest lanes a scan picks among.
const turnLanes = defaultPeek

// maxTurns bounds the zones a task type's turns remember.
const maxTurns = 4096

// zoneTurns is one task type's turns in this process.
type zoneTurns struct {
	mu   sync.Mutex
	seq  uint64
	last map[string]uint64 // zone prefix -> seq of the scan that last took it
}

func (q *Queue) turnsOf(taskType string) *zoneTurns {
	if v, ok := q.scanTurns.Load(taskType); ok {
		return v.(*zoneTurns)
	}
	v, _ := q.scanTurns.LoadOrStore(taskType, &zoneTurns{last: map[string]uint64{}})
	return v.(*zoneTurns)
}

// took records that a scan took a lane of each zone zs.
func (t *zoneTurns) took(zs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.last)+len(zs) > maxTurns {
		clear(t.last)
	}
	for _, z := range zs {
		t.seq++
		t.last[z] = t.seq
	}
}

// order returns the zones of es in turn order (least recently taken first,
// then by their oldest entry's place in es) and, per zone, the indexes of
// its entries in es.
func (t *zoneTurns) order(es []pointerEntry) ([]string, map[string][]int) {
	var zones []string
	lanes := map[string][]int{}
	for i, e := range es {
		z := string(e.Value.Zone)
		if _, ok := lanes[z]; !ok {
			zones = append(zones, z)
		}
		lanes[z] = append(lanes[z], i)
	}
	t.mu.Lock()
	last := make([]uint64, len(zones))
	for i, z := range zones {
		last[i] = t.last[z]
	}
	t.mu.Unlock()
	idx := make([]int, len(zones))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return last[idx[a]] < last[idx[b]] })
	out := make([]string, len(zones))
	for i, j := range idx {
		out[i] = zones[j]
	}
	return out, lanes
}

// pickByTurn picks the entry of es a scan takes: the zone whose turn it
// is, one of its turnLanes oldest lanes at random; the zone's turn is
// taken (by a stale pick too, which acquire clears and picks again: rare,
// and it costs that zone one turn).
func (q *Queue) pickByTurn(taskType string, es []pointerEntry) int {
	if mutant.On("quick.scan-turns") {
		return q.pickByZone(es) // a zone at random, as scans picked before
	}
	t := q.turnsOf(taskType)
	zones, lanes := t.order(es)
	in := lanes[zones[0]]
	in = in[:min(len(in), turnLanes)]
	i := in[q.randUint64()%uint64(len(in))]
	t.took(zones[0])
	return i
}

// candidatesOf picks up to n candidates among the pickable entries es a
// scan saw, none of picked's zone: one per zone first, in turn order
// (zoneTurns), each zone's oldest lane, so that a scan's round visits each
// zone once however many lanes a hot zone has vested (issue 22, item 6,
// counted per zone); only when the entries hold fewer other zones than n,
// more lanes of the zones already chosen (picked's included), so that one
// busy zone alone still keeps every waiting executor at work. A candidate
// takes no turn: the consumer may have no claimer waiting for it (the
// worker's scanner scans for its own lane too), and a zone whose turn a
// dropped candidate took would wait a round more.
func (q *Queue) candidatesOf(taskType string, es []pointerEntry, picked laneRef, n int) []LaneCandidate {
	pz := string(picked.z.space.Bytes())
	used := make([]bool, len(es))
	var out []LaneCandidate
	add := func(i int) {
		e := es[i]
		used[i] = true
		l := e.lane()
		out = append(out, LaneCandidate{
			TaskType: taskType, ItemSpace: l.z.itemSpace, Priority: l.prio, Lane: l.lane,
			PtrAt: time.UnixMilli(e.PtrMs), lane: l, ptrMs: e.PtrMs,
		})
	}
	if mutant.On("quick.scan-zone-once") {
		// Every lane in the order read: a hot zone's lanes crowd out
		// the other zones.
		for i := range es {
			if len(out) == n {
				break
			}
			add(i)
		}
		return out
	}
	zones, lanes := q.turnsOf(taskType).order(es)
	for _, z := range zones {
		if len(out) == n {
			break
		}
		if z != pz {
			add(lanes[z][0])
		}
	}
	for i := range es {
		if len(out) == n {
			break
		}
		if !used[i] {
			add(i)
		}
	}
	return out
}

// pickByZone picks an entry of es at random by zone: a zone at random among
// those es hold, then one of its lanes: how scans picked before zone turns
// (the mutants quick.scan-shallow and quick.scan-turns keep it, to show
// what the turns buy).
func (q *Queue) pickByZone(es []pointerEntry) int {
	var zones []string
	seen := map[string]bool{}
	for _, e := range es {
		if z := string(e.Value.Zone); !seen[z] {
			seen[z] = true
			zones = append(zones, z)
		}
	}
	z := zones[q.randUint64()%uint64(len(zones))]
	var in []int
	for i, e := range es {
		if string(e.Value.Zone) == z {
			in = append(in, i)
		}
	}
	return in[q.randUint64()%uint64(len(in))]
}

// checkFrom checks ClaimOptions.Scan and From.
func checkFrom(o ClaimOptions) error {
	if o.Scan < 0 || o.Scan > maxScan {
		return fmt.Errorf("%w: Scan %d is outside 0..%d", ErrInvalidOption, o.Scan, maxScan)
	}
	c := o.From
	if c == nil {
		return nil
	}
	if o.Lane != nil {
		return fmt.Errorf("%w: a claim takes Lane or From, not both", ErrInvalidOption)
	}
	if c.lane.z.space.Bytes() == nil {
		return fmt.Errorf("%w: the From candidate was not returned by a claim", ErrInvalidOption)
	}
	if c.TaskType != o.TaskType || c.lane.z.taskType != o.TaskType {
		return fmt.Errorf("%w: the From candidate is a lane of %q, not %q", ErrInvalidOption, c.TaskType, o.TaskType)
	}
	return nil
}

// acquireCandidate leases the lane of opts.From, as acquire leases a lane
// it picked from the index, when the lane's state still names the pointer
// the scan saw and that pointer is vested (a lapsed lease's included);
// found is false otherwise (leased by another claim since, handed back
// elsewhere, emptied). The lease is not written yet (LaneLease.unsaved).
// pre issues the lane's read beside its state, as in acquireWith.
//
// Keys: snapshot reads of Z (1, prio, lane) and of the pointer the scan
// saw, S (2, "p", type, prio, ms, hash, lane), with a read-conflict key on
// the lane state: a claim that leased the lane meanwhile wrote it, so of
// two claims of one lane exactly one commits, and the other's retry reads
// the lease and finds nothing.
func (q *Queue) acquireCandidate(tr kv.Transaction, opts ClaimOptions, short bool, now time.Time, pre func(laneRef) *laneRead) (p LaneLease, found bool, read *laneRead, err error) {
	c := opts.From
	l := c.lane
	snap := tr.Snapshot()
	sf := snap.Get(l.stateKey())
	pf := snap.Get(q.pointerKeyOf(l, c.ptrMs))
	lr := pre(l)
	miss := func() (LaneLease, bool, *laneRead, error) {
		return LaneLease{}, false, nil, lr.discard()
	}
	v, err := sf.Get()
	if err != nil {
		return LaneLease{}, false, nil, err
	}
	pv, err := pf.Get()
	if err != nil {
		return LaneLease{}, false, nil, err
	}
	if err := tr.AddReadConflictKey(l.stateKey()); err != nil {
		return LaneLease{}, false, nil, err
	}
	check := !mutant.On("quick.from-stale")
	if pv == nil && check {
		return miss() // the pointer moved: the lane was leased or handed back since
	}
	// As in acquire: a missing or undecodable state is rebuilt from the
	// pointer.
	old := laneState{PtrMs: c.ptrMs}
	if v != nil {
		var got laneState
		if got.unmarshal(v) == nil {
			old = got
		}
	}
	if check && (old.PtrMs != c.ptrMs || old.PtrMs > now.UnixMilli()) {
		// A state naming another pointer (this one is stale: the index
		// claims clear it, acquire) or a pointer not vested.
		return miss()
	}
	var lapsedShort uint64
	if old.leased() && old.Short {
		lapsedShort = old.Token
	}
	return LaneLease{
		TaskType: l.z.taskType, ItemSpace: l.z.itemSpace, Priority: l.prio, Lane: l.lane,
		Deadline: now.Add(q.opts.LaneLeaseTime).Truncate(time.Millisecond), Holder: opts.Holder,
		Lapsed: old.leased(), Short: short,
		lane: l, token: newToken(), unsaved: true, fromMs: c.ptrMs, lapsedShort: lapsedShort,
	}, true, lr, nil
}
