package lanes

import (
	"math"
	"slices"
	"strings"
	"time"
)

// SkewEstimate is this worker's clock offset from the task type's time
// reference (see Tracker.Skew).
type SkewEstimate struct {
	// Offset is this worker's clock minus the reference: positive when this
	// worker runs ahead.
	Offset time.Duration
	// Bound is the estimate's error bound.
	Bound time.Duration
	// Samples is the number of other members the estimate used.
	Samples int
	// Majority reports whether the reference is the median of a majority of
	// the live members whose clocks agree; otherwise it is the clock of the
	// most senior active member (the one that joined first).
	Majority bool
	// Reference is the ID of the senior member when Majority is false.
	Reference string
}

// Bounds of a clock comparison through read versions: the beat reads its
// clock just before its read version arrives (a GRV round trip, allowed up
// to grvAllowance), clocks are published in whole milliseconds, and versions
// advance 1,000,000 a second within driftPerVersionSecond.
const (
	grvAllowance   = 5 * time.Millisecond
	truncation     = time.Millisecond
	driftPerSecond = 100 * time.Microsecond // 100 ppm
)

// peerOffset estimates member m's clock minus this observer's, at the
// observer's round at now with read version rv, and the estimate's bound.
//
// Two rulers are available, and the one with the smaller bound is used. A
// bracketed sample (the member's clock W, first seen at the round at hi and
// not at the round at lo, on the observer's clock) gives W - (lo+hi)/2
// within (hi-lo)/2: self-consistent, but only after the member has beaten
// twice in view and only as tight as rounds are frequent. Read versions
// give an estimate at first sight: the member's beat carries its clock W at
// read version V, so at this round, version rv, its clock reads about
// W + (rv-V)/1e6 s. That is within a few milliseconds on a cluster, whose
// versions advance 1,000,000 a second, unless versions and clocks parted
// between V and rv (a recovery makes versions jump; a clock can be
// stepped). rulerErr is how far they parted between the observer's own
// last two rounds, and widens the bound; the beat must be at most maxAge
// old.
func peerOffset(m memberState, now time.Time, rv int64, rulerErr, maxAge time.Duration) (off, bound time.Duration, ok bool) {
	if m.sample.ok {
		half := m.sample.hi.Sub(m.sample.lo) / 2
		mid := m.sample.lo.Add(half)
		// W has no monotonic reading, so this is a wall-clock difference.
		off, bound, ok = m.sample.wall.Sub(mid), half+truncation, true
	}
	if !m.versionOK || !m.wallOK || rv <= 0 || rv < m.version {
		return off, bound, ok
	}
	age := time.Duration(rv-m.version) * time.Microsecond
	if age > maxAge {
		return off, bound, ok
	}
	drift := time.Duration(float64(age) * float64(driftPerSecond) / float64(time.Second))
	vBound := 2*truncation + grvAllowance + drift + rulerErr
	if ok && bound <= vBound {
		return off, bound, ok
	}
	return m.wall.Add(age).Sub(now), vBound, true
}

// candidate is one live member in the reference computation, its clock
// relative to the observer's.
type candidate struct {
	id      string
	off     time.Duration // its clock minus the observer's
	bound   time.Duration
	since   int64 // seniority: read version of its first beat; 0 unknown
	standby bool
}

// reference picks the task type's time reference among cands (the observer
// first, at offset 0): the median of the largest group of clocks within
// width of each other if it is a strict majority, otherwise the most senior
// active candidate (the most senior of all if none is active). Seniority is
// by the read version of the first beat, a total order every member sees
// alike; ties go to the smaller ID.
//
// So two workers whose clocks disagree never stop each other: without a
// majority, the one that joined first is the reference and only the other
// stands by. Three or more find the majority, which outvotes one clock set
// wrong however senior it is.
func reference(cands []candidate, width time.Duration) (ref candidate, majority bool) {
	sorted := slices.Clone(cands)
	slices.SortFunc(sorted, func(a, b candidate) int {
		if c := a.off - b.off; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	bestLo, bestN := 0, 0
	hi := 0
	for lo := range sorted {
		for hi < len(sorted) && sorted[hi].off-sorted[lo].off <= width {
			hi++
		}
		if n := hi - lo; n > bestN {
			bestLo, bestN = lo, n
		}
	}
	if 2*bestN > len(sorted) {
		group := sorted[bestLo : bestLo+bestN]
		med := group[len(group)/2]
		if len(group)%2 == 0 {
			lower := group[len(group)/2-1]
			med.off = lower.off + (med.off-lower.off)/2
			med.bound = max(med.bound, lower.bound)
		}
		for _, c := range group {
			med.bound = max(med.bound, c.bound)
		}
		med.id = ""
		return med, true
	}
	var senior *candidate
	for _, activeOnly := range []bool{true, false} {
		for i := range cands {
			c := &cands[i]
			if activeOnly && c.standby {
				continue
			}
			if senior == nil || seniorTo(*c, *senior) {
				senior = c
			}
		}
		if senior != nil {
			break
		}
	}
	return *senior, false
}

// seniorTo reports whether a joined before b. An unknown seniority (0, a
// member of an older version) ranks last.
func seniorTo(a, b candidate) bool {
	switch {
	case a.since == b.since:
		return a.id < b.id
	case a.since == 0:
		return false
	case b.since == 0:
		return true
	}
	return a.since < b.since
}

// rulerError is how far versions and this worker's clock parted between
// its rounds (now, rv) and (prevAt, prevRV): zero with no previous round.
func rulerError(prevAt time.Time, prevRV int64, now time.Time, rv int64) time.Duration {
	if prevAt.IsZero() || prevRV <= 0 || rv < prevRV {
		return 0
	}
	return (now.Sub(prevAt) - time.Duration(rv-prevRV)*time.Microsecond).Abs()
}

// verdict is the outcome of judging this worker's clock at one round.
type verdict struct {
	est     SkewEstimate
	ok      bool // est is known: some other live member was comparable
	standby bool
	waited  int  // rounds spent agreeing but held back (see judge)
	unsure  bool // the estimate was too imprecise to change the standing
}

// maxOffsetSeen clamps a peer's offset (about 36 years).
const maxOffsetSeen = time.Duration(1) << 60

// maxHoldRounds bounds how long an agreeing worker waits on standby for a
// disagreeing active member to stand by first.
const maxHoldRounds = 2

// judge decides, at a round, whether this worker takes lanes (active) or
// stands by: it stands by while its clock is further from the reference
// than maxOffset, allowing for the estimate's error (|offset| + bound). An
// estimate whose bound exceeds maxOffset/2 cannot tell, and leaves the
// standing as it was unless the offset is beyond the limit whatever the
// error (a joining worker stands by until it can tell); a
// worker on standby comes back within 3/4 of maxOffset. A
// worker on standby that agrees again waits up to maxHoldRounds rounds
// while an active member disagrees with the reference, so that member
// stands by (and stops claiming) before this one starts: otherwise, for one
// round, a clock far ahead could take over the leases this one just took.
// maxOffset <= 0 disables the judgement (always active).
func (t *Tracker) judge(v view, now time.Time, rv int64, selfSince int64, prev verdict, rulerErr time.Duration) verdict {
	o := t.reg.opts
	self := candidate{id: t.id, since: selfSince, standby: prev.standby}
	cands := []candidate{self}
	for id, m := range v.members {
		if id == t.id || !m.live(now, o.Timeout) {
			continue
		}
		off, bound, ok := peerOffset(m, now, rv, rulerErr, 2*o.Timeout)
		if !ok {
			continue
		}
		since := int64(0)
		if m.versionOK {
			since = m.since
		}
		// A garbage clock can be centuries off; clamped, differences of
		// offsets cannot overflow.
		off = min(max(off, -maxOffsetSeen), maxOffsetSeen)
		cands = append(cands, candidate{id: id, off: off, bound: bound, since: since, standby: m.standby})
	}
	if len(cands) == 1 {
		return verdict{}
	}
	t.mu.Lock()
	limit := t.maxOffset
	t.mu.Unlock()
	width := limit
	if width <= 0 {
		// No limit: every clock is in one group, and the reference is
		// the median of all.
		width = math.MaxInt64
	}
	ref, majority := reference(cands, width)
	out := verdict{ok: true, est: SkewEstimate{
		Offset: -ref.off, Bound: ref.bound, Samples: len(cands) - 1, Majority: majority, Reference: ref.id,
	}}
	if limit <= 0 {
		return out
	}
	if out.est.Offset.Abs()-out.est.Bound > limit {
		// Off beyond doubt, however imprecise the estimate.
		out.standby = true
		return out
	}
	if out.est.Bound > limit/2 {
		// Too imprecise to judge (rounds far apart, or versions and this
		// clock parted): the standing stays as it was. Standing by on
		// uncertainty alone would stop every worker at once whenever
		// their rounds are late.
		out.standby, out.waited, out.unsure = prev.standby, prev.waited, true
		return out
	}
	// Coming back takes a quarter of the limit to spare, so a clock near
	// the limit does not flap between standing by and taking lanes (each
	// flip moves lanes) as its estimate jitters.
	back := limit
	if prev.standby {
		back = limit - limit/4
	}
	if out.est.Offset.Abs()+out.est.Bound > back {
		out.standby = true
		return out
	}
	if prev.standby && prev.waited < maxHoldRounds {
		for _, c := range cands[1:] {
			if !c.standby && (c.off-ref.off).Abs()+c.bound > limit {
				out.standby, out.waited = true, prev.waited+1
				return out
			}
		}
	}
	return out
}

// ClockOffset returns this worker's clock minus the task type's time
// reference (Skew). ok is false while no other live member is comparable.
func (t *Tracker) ClockOffset() (offset time.Duration, ok bool) {
	e, ok := t.Skew()
	return e.Offset, ok
}

// Skew returns the estimate of this worker's clock against the task type's
// time reference, as of the last round. The reference is the median of a
// majority of the live members whose clocks agree, or without a majority
// the most senior active member's clock (see reference). Members are
// compared through read versions at first sight and through bracketed
// heartbeat readings afterwards (see peerOffset). ok is false while no other
// live member is comparable.
func (t *Tracker) Skew() (SkewEstimate, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.verdict.est, t.verdict.ok
}

// Standby reports whether this worker stands by: its clock is off the
// reference by more than the limit set with SetMaxOffset, so it takes no
// lanes, and the others watch its share.
func (t *Tracker) Standby() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.verdict.standby
}

// SetMaxOffset sets how far this worker's clock may be from the reference,
// error bound included, before it stands by. Zero (the default) never
// stands by. Set it before Join.
func (t *Tracker) SetMaxOffset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxOffset = d
}
