package lanes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Member is one worker of a task type as an observer sees it.
type Member struct {
	ID       string
	TaskType string
	// Counter is the member's heartbeat counter (0 if unreadable).
	Counter uint64
	// Clock is the member's wall clock at its last beat, as it reported it
	// (zero if unreadable). It is informative only: liveness never uses it.
	Clock time.Time
	// Info is what the member published (zero if absent or malformed).
	Info Info
	// InfoErr is set by Registry.Snapshot when the stored info is malformed.
	InfoErr error
	// LastChange is when, on the observer's clock, the observer first saw
	// the member's current heartbeat value.
	LastChange time.Time
	// Live reports whether LastChange was less than Timeout before the
	// observer's last round.
	Live bool
	// Standby reports that the member stands by: its clock is too far off
	// the others' for it to take lanes (see Tracker.Standby).
	Standby bool
}

// Tracker is one worker's membership in one task type: it heartbeats,
// observes the other members, and computes the lanes this worker watches.
// Its methods are safe for concurrent use; Join, Beat and Leave are
// serialised.
type Tracker struct {
	reg      *Registry
	taskType string
	id       string
	n        int

	op sync.Mutex // serialises the rounds: Join, Beat, Leave

	mu       sync.Mutex
	state    trackerState
	counter  uint64
	view     view
	lanes    []int
	lastBeat time.Time
	changed  chan struct{}

	// since is the read version of the first beat since the last Join.
	since int64
	// maxOffset is the clock offset allowed before standing by (skew.go).
	maxOffset time.Duration
	// verdict is the last round's judgement of this worker's clock.
	verdict verdict
	// lastAt and lastRV are the clock and read version of the last round.
	lastAt time.Time
	lastRV int64
}

type trackerState int

const (
	stateNew trackerState = iota
	stateJoined
	stateLeft
)

// NewTracker returns the Tracker of worker workerID for taskType, sharding
// it into lanes lanes. Every worker of a task type must use the same lane
// count and Replicas. Until it has joined, the Tracker watches every lane.
func NewTracker(reg *Registry, taskType, workerID string, lanes int) *Tracker {
	t := &Tracker{reg: reg, taskType: taskType, id: workerID, n: lanes, changed: make(chan struct{})}
	t.lanes = allLanes(lanes)
	return t
}

func allLanes(n int) []int {
	out := make([]int, max(n, 0))
	for i := range out {
		out[i] = i
	}
	return out
}

// ID returns the worker ID.
func (t *Tracker) ID() string { return t.id }

// TaskType returns the task type.
func (t *Tracker) TaskType() string { return t.taskType }

// Join registers the worker: it writes the heartbeat and info keys and makes
// a first observation of the other members, in one transaction. Joining
// again after Leave is allowed; joining twice is a plain Beat.
func (t *Tracker) Join(ctx context.Context) error {
	if t.taskType == "" || t.id == "" || t.n < 1 {
		return fmt.Errorf("%w: task type %q, worker %q, %d lanes", ErrInvalid, t.taskType, t.id, t.n)
	}
	t.op.Lock()
	defer t.op.Unlock()
	return t.round(ctx, true)
}

// Beat heartbeats once and observes the task type's members once, in one
// transaction: one blind Set of the heartbeat key, one snapshot range read
// of the membership, plus a Set of the info key only when this worker's
// lanes change and two clears per expired member found. It never conflicts.
// Lanes, Live and ClockOffset reflect the round once Beat returns nil; on
// error the previous view stands.
func (t *Tracker) Beat(ctx context.Context) error {
	t.op.Lock()
	defer t.op.Unlock()
	t.mu.Lock()
	joined := t.state == stateJoined
	t.mu.Unlock()
	if !joined {
		return fmt.Errorf("beat %s/%s: %w", t.taskType, t.id, ErrNotJoined)
	}
	return t.round(ctx, false)
}

// round is one heartbeat transaction, shared by Join and Beat.
func (t *Tracker) round(ctx context.Context, join bool) error {
	r, o := t.reg, t.reg.opts
	t.mu.Lock()
	prev, counter := t.view, t.counter
	t.mu.Unlock()
	if join {
		// A re-join starts from a fresh view: what was seen before Leave
		// says nothing about now.
		prev = view{}
	}

	var (
		obs     observation
		now     time.Time
		beatNo  uint64
		lanes   []int
		badKeys int
		since   int64
		vd      verdict
		readAt  int64
		// truncated is set when the membership read stopped at its bound.
		truncated bool
	)
	t.mu.Lock()
	prevVerdict, prevSince, lastAt, lastRV := t.verdict, t.since, t.lastAt, t.lastRV
	t.mu.Unlock()
	if join {
		// A joining worker stands by until its clock is judged: it is the
		// junior member, and must not claim on a clock nobody compared.
		prevVerdict, prevSince = verdict{standby: true}, 0
	}
	hbKey, infoKey := r.hbKey(t.taskType, t.id), r.infoKey(t.taskType, t.id)
	err := r.db.Transact(ctx, func(tr kv.Transaction) error {
		// Everything is recomputed per attempt: the transaction may retry.
		// The clock is read just before the read version, so the pair
		// (clock, version) published below is a few milliseconds apart.
		now = o.Clock.Now()
		rv, err := tr.GetReadVersion().Get()
		if err != nil {
			return err
		}
		raw, bad, full, err := r.readMembers(tr, t.taskType)
		if err != nil {
			return err
		}
		badKeys, truncated = bad, !full
		beatNo = counter + 1
		if own, ok := raw[t.id]; ok && join {
			// Continue the stored counter, so that a restarted worker's
			// first beat cannot repeat the value observers last saw.
			c, _, _ := decodeHB(own.hb)
			beatNo = max(beatNo, c+1)
		}
		since = prevSince
		if since == 0 {
			since = rv
		}

		obs = observe(prev, raw, now, t.id, o.ExpireAfter)
		readAt = rv
		vd = t.judge(obs.next, now, rv, since, prevVerdict, rulerError(lastAt, lastRV, now, rv))
		hb := encodeBeat(hbValue{counter: beatNo, wall: now, version: rv, since: since, standby: vd.standby})
		// A blind Set: no read of the key, so nothing to conflict on, and
		// a retry after commit_unknown_result rewrites the same counter.
		tr.Set(hbKey, hb)
		self := obs.next.members[t.id]
		self.hb, self.counter, self.wall, self.wallOK = hb, beatNo, time.UnixMilli(now.UnixMilli()), true
		self.version, self.since, self.versionOK, self.standby = rv, since, true, vd.standby
		self.lastChange, self.sample = now, skewSample{}

		self.confirmed = true
		obs.next.members[t.id] = self
		lanes = t.assign(obs.next, now)
		info := encodeInfo(Info{Host: o.Host, NumLanes: t.n, Replicas: o.Replicas, Lanes: lanes})
		// The info key is rewritten only when it differs from what the
		// database holds, which also repairs it if an observer expired us.
		if !self.hasInfo || !bytes.Equal(self.infoRaw, info) {
			tr.Set(infoKey, info)
			self.infoRaw, self.hasInfo = info, true
			self.info, self.infoErr = decodeInfo(info)
		}
		obs.next.members[t.id] = self

		for _, id := range obs.expire {
			m := obs.next.members[id]
			if m.hb != nil {
				// Clear the heartbeat only if it is still the value we judged
				// dead: a member that came back keeps its heartbeat (it
				// rewrites its info on its next beat). An atomic op, so the
				// beat still cannot conflict.
				tr.CompareAndClear(r.hbKey(t.taskType, id), m.hb)
			}
			tr.Clear(r.infoKey(t.taskType, id))
			delete(obs.next.members, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("beat %s/%s: %w", t.taskType, t.id, err)
	}
	t.mu.Lock()
	t.since, t.lastAt, t.lastRV = since, now, readAt
	wasStandby := t.verdict.standby
	t.verdict = vd
	t.mu.Unlock()
	if vd.standby != wasStandby || (join && vd.standby) {
		t.logVerdict(vd)
	}
	if truncated {
		t.reg.opts.Logger.Warn("lanes: more members than one round reads; those past the bound are not counted",
			"task_type", t.taskType, "worker", t.id, "max_members", MaxMembers)
	}
	t.apply(obs, now, beatNo, lanes, badKeys)
	return nil
}

// apply installs a committed round's outcome.
func (t *Tracker) apply(obs observation, now time.Time, beatNo uint64, lanes []int, badKeys int) {
	log := t.reg.opts.Logger.With("task_type", t.taskType, "worker", t.id)
	t.mu.Lock()
	t.view, t.counter, t.lastBeat, t.state = obs.next, beatNo, now, stateJoined
	moved := !slices.Equal(lanes, t.lanes)
	if moved {
		t.lanes = lanes
		close(t.changed)
		t.changed = make(chan struct{})
	}
	t.mu.Unlock()

	for _, id := range obs.joined {
		if id != t.id {
			log.Info("lanes: member appeared", "member", id)
		}
	}
	for _, id := range obs.gone {
		log.Info("lanes: member left", "member", id)
	}
	for _, id := range obs.expire {
		log.Info("lanes: expired dead member", "member", id)
	}
	for _, id := range obs.badInfo {
		log.Warn("lanes: member info unreadable", "member", id, "err", obs.next.members[id].infoErr)
	}
	for _, id := range obs.newInfo {
		in := obs.next.members[id].info
		if id != t.id && (in.NumLanes != t.n || in.Replicas != t.reg.opts.Replicas) {
			log.Warn("lanes: member assigns with different parameters; lanes may be left unwatched",
				"member", id, "its_lanes", in.NumLanes, "its_replicas", in.Replicas,
				"our_lanes", t.n, "our_replicas", t.reg.opts.Replicas)
		}
	}
	if badKeys > 0 {
		log.Warn("lanes: skipped malformed registry keys", "count", badKeys)
	}
	if moved {
		log.Info("lanes: lanes changed", "count", len(lanes))
	}
}

// assign computes this worker's lanes from view v at now.
//
// A member seen for the first time counts as live, but it may be a dead
// member whose keys have not expired yet, which the workers that have
// watched it longer already count dead: they then leave its lanes to this
// worker, while this worker would leave them to the dead member, and the
// lanes would go unwatched for up to Timeout. So the worker watches the
// union of its lanes with and without the members it has not yet seen beat
// (it has seen them only once). Watching a lane too many costs a little
// scanning; a lane too few delays its jobs. Once every member has been seen
// twice, one period after a change, the union is just Assign's share.
func (t *Tracker) assign(v view, now time.Time) []int {
	o := t.reg.opts
	if v.members[t.id].standby {
		// A worker on standby watches nothing; the others share its lanes.
		return nil
	}
	var live, confirmed []string
	for id, m := range v.members {
		if m.live(now, o.Timeout) && !m.standby {
			live = append(live, id)
			if m.confirmed {
				confirmed = append(confirmed, id)
			}
		}
	}
	lanes := Assign(t.n, live, t.id, o.Replicas)
	if len(confirmed) == len(live) {
		return lanes
	}
	more := Assign(t.n, confirmed, t.id, o.Replicas)
	lanes = append(lanes, more...)
	slices.Sort(lanes)
	return slices.Compact(lanes)
}

// logVerdict logs a change of standby.
func (t *Tracker) logVerdict(vd verdict) {
	log := t.reg.opts.Logger.With("task_type", t.taskType, "worker", t.id)
	if vd.standby {
		log.Warn("lanes: standing by: this worker's clock is too far from the others' to take lanes",
			"offset", vd.est.Offset, "bound", vd.est.Bound, "max_offset", t.maxOffset,
			"majority", vd.est.Majority, "reference", vd.est.Reference)
		return
	}
	log.Info("lanes: clock agrees with the others; taking lanes", "offset", vd.est.Offset, "bound", vd.est.Bound)
}

// Leave deregisters the worker, clearing its keys in one range clear, so
// the others take its lanes at their next beat instead of after Timeout.
// Afterwards Lanes is empty until the next Join.
func (t *Tracker) Leave(ctx context.Context) error {
	t.op.Lock()
	defer t.op.Unlock()
	t.mu.Lock()
	joined := t.state == stateJoined
	t.mu.Unlock()
	if !joined {
		return fmt.Errorf("leave %s/%s: %w", t.taskType, t.id, ErrNotJoined)
	}
	b, e := t.reg.memberSpace(t.taskType, t.id).Range()
	err := t.reg.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: b, End: e})
		return nil
	})
	if err != nil {
		return fmt.Errorf("leave %s/%s: %w", t.taskType, t.id, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state, t.view, t.verdict, t.since, t.lastAt, t.lastRV = stateLeft, view{}, verdict{}, 0, time.Time{}, 0
	if len(t.lanes) > 0 {
		t.lanes = nil
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return nil
}

// Lanes returns the lanes this worker watches now, ascending: every lane
// before Join (no live member seen yet), none after Leave, otherwise its
// share by Assign among the members live at the last round - widened,
// while some member has been seen only once, by its share without those
// members (see the package comment).
func (t *Tracker) Lanes() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lanes)
}

// Changed returns a channel that is closed the next time Lanes changes.
// Call it again after it fires for the following change.
func (t *Tracker) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// LastBeat returns the observer-clock time of the last successful round,
// zero before Join. If it is older than Timeout, the others may already
// count this worker dead and watch its lanes.
func (t *Tracker) LastBeat() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastBeat
}

// Live returns the members live at the last round, this worker included,
// sorted by ID.
func (t *Tracker) Live() []Member {
	return t.members(true)
}

// Members returns every member of the last round's view, live or not,
// sorted by ID.
func (t *Tracker) Members() []Member {
	return t.members(false)
}

func (t *Tracker) members(liveOnly bool) []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Member, 0, len(t.view.members))
	for id, m := range t.view.members {
		live := m.live(t.view.at, t.reg.opts.Timeout)
		if liveOnly && !live {
			continue
		}
		mem := Member{
			ID: id, TaskType: t.taskType, Counter: m.counter, Info: m.info,
			LastChange: m.lastChange, Live: live, Standby: m.standby,
		}
		mem.Info.Lanes = slices.Clone(m.info.Lanes)
		if m.wallOK {
			mem.Clock = m.wall
		}
		out = append(out, mem)
	}
	slices.SortFunc(out, func(a, b Member) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// Run joins (retrying each period until it succeeds), then beats every
// HeartbeatPeriod until ctx is done, then leaves and returns ctx's error.
// Beat failures are logged, not returned: a worker that misses beats is
// counted dead by the others after Timeout and comes back with its next
// successful beat. Each round is bounded by Timeout, since a beat later
// than that is worthless. Run takes its ticks from Options.Clock, so tests
// drive it with a clock.Fake.
func (t *Tracker) Run(ctx context.Context) error {
	o := t.reg.opts
	ticker := o.Clock.NewTicker(o.HeartbeatPeriod)
	defer ticker.Stop()
	log := o.Logger.With("task_type", t.taskType, "worker", t.id)

	t.mu.Lock()
	joined := t.state == stateJoined
	t.mu.Unlock()
	for {
		rctx, cancel := context.WithTimeout(ctx, o.Timeout)
		var err error
		if joined {
			err = t.Beat(rctx)
		} else {
			err = t.Join(rctx)
			joined = err == nil
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			if errors.Is(err, ErrInvalid) {
				return err
			}
			log.Warn("lanes: heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			if joined {
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
				if err := t.Leave(lctx); err != nil {
					log.Warn("lanes: leave failed; the others will expire this worker", "err", err)
				}
				cancel()
			}
			return ctx.Err()
		case <-ticker.C():
		}
	}
}
