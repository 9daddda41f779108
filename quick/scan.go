package quick

import (
	"fmt"
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

// maxScan caps ClaimOptions.Scan, and so how many pointers the index read
// of a scanning claim takes (scanPeek): a scan stays a few keys.
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

// scanPeek is how many pointers per priority a claim reads: ClaimOptions.
// Peek, or enough to find Scan more zones besides the claimed one.
func scanPeek(opts ClaimOptions) int {
	if opts.Scan <= 0 {
		return opts.Peek
	}
	return max(opts.Peek, 2*(opts.Scan+1))
}

// candidatesOf picks up to n candidates among the pickable entries es an
// index read saw, in the order read (priority first): one per zone first,
// none of picked's zone, so that a scan's round visits each zone once
// however many lanes a hot zone has vested (issue 22, item 6, counted per
// zone); only when the entries hold fewer other zones than n, more lanes
// of the zones already chosen (picked's included), so that one busy zone
// alone still keeps every waiting executor at work.
func candidatesOf(taskType string, es []pointerEntry, picked laneRef, n int) []LaneCandidate {
	seen := map[string]bool{string(picked.z.space.Bytes()): true}
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
	for i, e := range es {
		if len(out) == n {
			return out
		}
		zk := string(e.Value.Zone)
		if seen[zk] && !mutant.On("quick.scan-zone-once") {
			continue
		}
		seen[zk] = true
		add(i)
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
// those es hold, then one of its lanes. A scanning claim so takes a hot
// zone's lane no more often than a cold zone's, however many lanes the hot
// one has vested (a pick at random by lane gave a zone of 64 lanes 64
// turns to a one-lane zone's one).
func (q *Queue) pickByZone(es []pointerEntry) int {
	if mutant.On("quick.scan-zone-once") {
		return int(q.randUint64() % uint64(len(es)))
	}
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
