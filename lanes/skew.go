package lanes

import (
	"slices"
	"time"
)

// SkewEstimate is this worker's clock offset against the other live
// members, as estimated from their heartbeats.
type SkewEstimate struct {
	// Offset is this worker's clock minus the median of the other members'
	// clocks: positive when this worker runs ahead.
	Offset time.Duration
	// Bound is the estimate's error bound, apart from one transaction's
	// latency (see ClockOffset).
	Bound time.Duration
	// Samples is the number of members the median was taken over.
	Samples int
}

// ClockOffset returns this worker's clock minus the median of the other
// live members' clocks. ok is false while no other live member has a usable
// reading, which takes two rounds after a member is first seen.
//
// Method. A member reports its wall clock W in each heartbeat. The observer
// cannot know when W was written, only that the round at time lo (its own
// clock) did not see it yet and the round at hi did: the write fell in
// (lo, hi]. So the member's offset from this worker is estimated as
// W - (lo+hi)/2, with error at most (hi-lo)/2, plus the latency of one
// transaction (the member reads its clock before it commits; the observer
// reads its clock before its read version), plus 1ms of truncation. A
// reading from a first sighting has no lo and is not used. With a round
// every HeartbeatPeriod P, each estimate is within P/2 + latency, and so is
// the median of them, which also shrugs off a minority of badly set clocks.
// Clock rate differences over one period are negligible next to that.
//
// The worker runtime compares |offset| with the lease: leases are wall
// clock deadlines, so a worker far off the others must not claim.
func (t *Tracker) ClockOffset() (offset time.Duration, ok bool) {
	e, ok := t.Skew()
	return e.Offset, ok
}

// Skew returns the estimate ClockOffset reports, with its error bound.
func (t *Tracker) Skew() (SkewEstimate, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var (
		offs  []time.Duration
		bound time.Duration
	)
	for id, m := range t.view.members {
		if id == t.id || !m.sample.ok || !m.live(t.view.at, t.reg.opts.Timeout) {
			continue
		}
		half := m.sample.hi.Sub(m.sample.lo) / 2
		mid := m.sample.lo.Add(half)
		// W has no monotonic reading, so this is a wall-clock difference.
		offs = append(offs, m.sample.wall.Sub(mid))
		bound = max(bound, half)
	}
	if len(offs) == 0 {
		return SkewEstimate{}, false
	}
	slices.Sort(offs)
	k := len(offs) / 2
	med := offs[k]
	if len(offs)%2 == 0 {
		med = offs[k-1] + (offs[k]-offs[k-1])/2
	}
	return SkewEstimate{Offset: -med, Bound: bound + time.Millisecond, Samples: len(offs)}, true
}
