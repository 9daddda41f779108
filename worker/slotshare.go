package worker

import (
	"sync"
	"sync/atomic"

	"github.com/quickfdb/quickfdb/internal/mutant"
)

// Shared handler slots: the runners of one task type in a Group's workers
// (one worker per cluster, cluster.go) share that task type's Concurrency
// instead of each having its own (docs/design.md, "Workers that serve
// several clusters").
//
// The share partitions the slots: each member runner has a concurrency c_i
// (its handlers at most, and 2*c_i claimed runs with the prefetch) and the
// c_i add up to the total, so the members together never run more handlers
// than the total: a launch takes a slot under the share's lock
// (tryLaunch), and a member's concurrency grows only into slots no other
// member holds or may still use (free = total - Σ max(c_j, active_j)).
//
// The split follows demand, max-min fair:
//   - a member is pressed when its claims want slots and it has none left
//     (runner.reserve found its capacity full): it is saturated;
//   - a member is slack when its scanner found nothing vested, its claims
//     fail (its cluster is down or slow: claims time out, Config.ClaimTimeout)
//     or it refuses to claim (paused, clock);
//   - a slack member's target is what it runs now, at least one slot (so it
//     can still find work and turn pressed); the pressed members split the
//     rest equally. A shrinking member's concurrency drops at once (its
//     running handlers finish, none starts above it); a growing member's
//     grows as slots free.
//
// So two saturated clusters get half each; a cluster that is down, slow or
// idle keeps one slot and the others get the rest; and a cluster can never
// take a pressed member's fair share from it, whatever its claims do, so
// one cluster's outage cannot slow the others below their share.
//
// No keys: all of it is in the process.

// slotShare is one task type's slots, shared by its runners in a Group.
type slotShare struct {
	mu      sync.Mutex
	total   int
	members []*shareMember
	// pending counts slot grants decided but not yet delivered to their
	// runners (deliver): a test on a fake clock waits for none before it
	// advances the clock (Group.quiet).
	pending atomic.Int32
}

// shareMember is one runner's part of a slotShare.
type shareMember struct {
	s *slotShare
	r *runner
	// c is the member's concurrency now (written under s.mu, read
	// without it by the runner's capacity).
	c atomic.Int32
	// Under s.mu:
	target  int
	active  int // handlers launched and not returned
	pressed bool
}

// newSlotShare shares total slots among runners, equally to begin with. A
// member gets at least one slot: total is raised to len(runners) if below.
func newSlotShare(total int, runners []*runner) *slotShare {
	s := &slotShare{total: max(total, len(runners))}
	for i, r := range runners {
		m := &shareMember{s: s, r: r}
		c := s.total / len(runners)
		if i < s.total%len(runners) {
			c++
		}
		m.target = c
		m.c.Store(int32(c))
		s.members = append(s.members, m)
		r.share = m
	}
	return s
}

// conc is the member's concurrency now.
func (m *shareMember) conc() int { return int(m.c.Load()) }

// tryLaunch takes a handler slot for a run, if the member has one.
func (m *shareMember) tryLaunch() bool {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.active < m.conc() || mutant.On("worker.share-launch") {
		// (The mutant launches past the share: the members together run
		// more handlers than the task type's Concurrency.)
		m.active++
		return true
	}
	return false
}

// release is a handler returning. With a claimed run waiting (hasWaiting)
// the member keeps the slot for it if still within its concurrency (keep);
// otherwise the slot goes back to the share, and the members it lets grow
// are returned for deliver (called without the runner's lock).
func (m *shareMember) release(hasWaiting bool) (keep bool, grown []*shareMember) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if hasWaiting && m.active <= m.conc() {
		return true, nil
	}
	m.active--
	if !m.pressed {
		// A slack member's target follows what it still runs down to one
		// slot: the pressed members grow into what it frees.
		return false, s.rebalanceLocked()
	}
	return false, s.growLocked()
}

// setPressed marks the member pressed (saturated) or slack and rebalances
// on a change; it delivers the grants itself (no runner lock may be held).
func (m *shareMember) setPressed(pressed bool) {
	if m == nil || (!pressed && mutant.On("worker.share-slack")) {
		// (The mutant never marks a member slack: a cluster that is down
		// keeps its share, and the others never get it.)
		return
	}
	s := m.s
	s.mu.Lock()
	if m.pressed == pressed {
		s.mu.Unlock()
		return
	}
	m.pressed = pressed
	grown := s.rebalanceLocked()
	s.mu.Unlock()
	s.deliver(grown)
}

// rebalanceLocked sets the targets from who is pressed, shrinks the members
// above theirs at once and grows the others into the free slots.
func (s *slotShare) rebalanceLocked() []*shareMember {
	var pressed []*shareMember
	rest := s.total
	for _, m := range s.members {
		if m.pressed {
			pressed = append(pressed, m)
			continue
		}
		m.target = max(1, m.active)
		rest -= m.target
	}
	if len(pressed) == 0 {
		// Nobody wants more: the slack members keep what they have (a
		// member's work may come back any moment), none grows.
		for _, m := range s.members {
			m.target = max(m.target, m.conc())
		}
		return nil
	}
	for i, m := range pressed {
		t := rest / len(pressed)
		if i < rest%len(pressed) {
			t++
		}
		if mutant.On("worker.share-greedy") {
			// Deliberate break: the first pressed member takes the rest.
			t = 1
			if i == 0 {
				t = rest - len(pressed) + 1
			}
		}
		m.target = max(1, t)
	}
	for _, m := range s.members {
		if m.target < m.conc() {
			m.c.Store(int32(m.target))
		}
	}
	return s.growLocked()
}

// growLocked grows the members below their targets into the free slots,
// one slot at a time in turn, and returns those that grew.
func (s *slotShare) growLocked() []*shareMember {
	free := s.total
	for _, m := range s.members {
		free -= max(m.conc(), m.active)
	}
	var grown []*shareMember
	for free > 0 {
		any := false
		for _, m := range s.members {
			if free > 0 && m.conc() < m.target {
				m.c.Add(1)
				free--
				any = true
				grown = appendOnce(grown, m)
			}
		}
		if !any {
			break
		}
	}
	s.pending.Add(int32(len(grown)))
	return grown
}

func appendOnce(ms []*shareMember, m *shareMember) []*shareMember {
	for _, x := range ms {
		if x == m {
			return ms
		}
	}
	return append(ms, m)
}

// deliver tells each grown member's runner: it launches the claimed runs
// waiting for a slot and wakes its claim loops waiting for one. The caller
// holds no runner lock.
func (s *slotShare) deliver(grown []*shareMember) {
	for _, m := range grown {
		m.r.slotsGrew()
		s.pending.Add(-1)
	}
}

// slotsGrew is the runner's side of a grant: launch the runs waiting for a
// handler slot, then wake the claim loops waiting for slots.
func (r *runner) slotsGrew() {
	r.mu.Lock()
	var launch []*jobState
	for len(r.waiting) > 0 && !r.w.killed.Load() && r.share.tryLaunch() {
		launch = append(launch, r.waiting[0])
		r.waiting[0] = nil
		r.waiting = r.waiting[1:]
		r.active++
	}
	r.signalSlotsLocked()
	r.mu.Unlock()
	for _, st := range launch {
		go r.runJob(st)
	}
}

// conc is the runner's concurrency now: its Concurrency, or its part of
// the shared slots in a Group.
func (r *runner) conc() int {
	if r.share != nil {
		return r.share.conc()
	}
	return r.opts.Concurrency
}

// launchSlot takes a handler slot for a run (under r.mu): within the
// runner's Concurrency, and within its share in a Group.
func (r *runner) launchSlot() bool {
	if r.active >= r.opts.Concurrency {
		return false
	}
	return r.share == nil || r.share.tryLaunch()
}

// slotDone is a handler returning (under r.mu): whether the next waiting run
// takes its slot, and the grants to deliver once r.mu is released.
func (r *runner) slotDone(hasWaiting bool) (keep bool, grown []*shareMember) {
	if r.share == nil {
		return hasWaiting, nil
	}
	return r.share.release(hasWaiting)
}

// deliverGrants delivers what slotDone returned (without r.mu).
func (r *runner) deliverGrants(grown []*shareMember) {
	if len(grown) > 0 {
		r.share.s.deliver(grown)
	}
}

// setPressed reports the runner saturated (true) or slack (false) to its
// share, if it has one. Without r.mu.
func (r *runner) setPressed(p bool) { r.share.setPressed(p) }
