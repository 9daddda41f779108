package quick

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestZonesStateMachine drives jobs of several tenants (one with the
// longest name allowed) through random interleavings of every operation —
// enqueue (batches that mix given and generated IDs, repeat IDs as a retry
// does, carry the longest unique keys, and are retried with the same IDs),
// lanes stripped of their pointer as a copied tenant's are, claims that
// take a lane from the pointer index or keep and continue on one, lane
// hand-backs, every ack (failures with the longest reasons kept), extend,
// checkpoint, cancel, lane resizing, tenant limits, tenant moves and
// adoptions (move_sm_test.go), workers that vanish or shut down, clock
// advances — over a database that injects every commit fault
// kv.WithFaults knows. After every step it checks the database against a
// model, key by key: no job lost or duplicated, no write under a stale
// lease, attempts and dead letters as configured, duplicates reported only
// with a stored job's ID, and the pointer invariant (zone.go): every lane
// holding a job has a lane state and exactly one pointer at its PtrMs, no
// pointer without its lane, and an unleased pointer is vested when its
// lane has a vested job and otherwise vests no later than its earliest. At
// the end every job left runs.
func TestZonesStateMachine(t *testing.T) {
	var jobs, steps, repeats, unpointed, limitSets int64
	maxLeased := map[int]int{}
	var faults kv.FaultStats
	var moves zmMoveStats
	cfg := kv.Faults{
		UnknownCommitted:      0.04,
		UnknownNotCommitted:   0.04,
		Conflict:              0.04,
		TimedOutCommitted:     0.015,
		TimedOutNotCommitted:  0.015,
		CancelledCommitted:    0.015,
		CancelledNotCommitted: 0.015,
		SlowCommit:            0.02,
	}
	defer func() {
		t.Logf("drove %d zones jobs through %d checked steps (%d repeated IDs, %d lanes stripped of their pointer, %d limit changes; most leased at once under a concurrency limit: %v; %+v); faults injected: %+v", jobs, steps, repeats, unpointed, limitSets, maxLeased, moves, faults)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		raw, space := fdbtest.Open(t)
		f := cfg
		f.Seed = rapid.Uint64().Draw(rt, "seed")
		clk := clock.NewFake(zsmEpoch)
		f.Advance = clk.Advance
		faulty := kv.WithFaults(raw, f)
		m := newZModel(rt, raw, faulty, space, clk)
		m.faults = cfg
		rt.Repeat(map[string]func(*rapid.T){
			"enqueue":  m.enqueue,
			"claim":    m.claim,
			"continue": m.continueHeld,
			"handback": m.handBack,
			"complete": m.ack(AckComplete),
			"fail":     m.ack(AckFail),
			"snooze":   m.ack(AckSnooze),
			"release":  m.ack(AckRelease),
			"dead":     m.ack(AckDeadLetter),
			"extend":   m.extend,
			"ckpt":     m.checkpoint,
			"cancel":   m.cancel,
			"lanes":    m.setLanes,
			"unpoint":  m.unpoint,
			"limits":   m.setLimits,
			"tenant":   m.moveOrAdopt,
			"vanish":   m.vanish,
			"shutdown": m.shutdown,
			"advance":  m.advance,
			"deadline": m.toDeadline,
			"":         m.check,
		})
		m.drain(rt)
		jobs += int64(len(m.order))
		steps += m.steps
		repeats += m.repeats
		unpointed += m.unpointed
		limitSets += m.limitSets
		moves = moves.add(m.mv)
		for l, n := range m.maxLeased {
			maxLeased[l] = max(maxLeased[l], n)
		}
		faults = zsmAdd(faults, faulty.Stats())
	})
	if missing := faults.Missing(cfg); len(missing) > 0 && !t.Failed() {
		if n, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String()); n < 100 {
			t.Logf("fault kinds never injected in %d checks: %v", n, missing)
		} else {
			t.Fatalf("fault kinds never injected: %v (the faults are switched off?)", missing)
		}
	}
}

var zsmEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func zsmAdd(a, b kv.FaultStats) kv.FaultStats {
	a.UnknownCommitted += b.UnknownCommitted
	a.UnknownNotCommitted += b.UnknownNotCommitted
	a.Conflicts += b.Conflicts
	a.TimedOutCommitted += b.TimedOutCommitted
	a.TimedOutNotCommitted += b.TimedOutNotCommitted
	a.CancelledCommitted += b.CancelledCommitted
	a.CancelledNotCommitted += b.CancelledNotCommitted
	a.SlowCommits += b.SlowCommits
	return a
}

const (
	zsmLease = 30 * time.Second
	zsmType  = "zsm"
)

// zsmTenants: "" and t1 live under the queue's subspace, t2 in a subspace of
// its own (Options.ZoneSpace), as a tenant's data would; the last has the
// longest name allowed (MaxItemSpaceLen), which every job key carries.
var zsmTenants = []string{"", "t1", "t2", zsmLongTenant}

var zsmLongTenant = strings.Repeat("L", MaxItemSpaceLen)

// zsmUniqueKeys: two short keys and one of the longest allowed
// (MaxUniqueKeyLen).
var zsmUniqueKeys = []string{"a", "b", strings.Repeat("u", MaxUniqueKeyLen)}

// zsmLongError is a failure reason of the longest kept (maxErrorLen): the
// job's value carries it from then on.
var zsmLongError = strings.Repeat("e", maxErrorLen)

type zmState int

const (
	zmPending zmState = iota
	zmDone
	zmDead
)

type zmJob struct {
	id          ID
	tenant      string
	state       zmState
	prio        Priority
	unique      string
	maxAttempts int
	attempts    int
	checkpoint  []byte
	vestAt      time.Time // when it may be claimed (lease deadline while leased)
	leased      bool
	token       uint64
	payload     []byte
	// slot: leased while its tenant had a concurrency limit, so the
	// lease holds one of the tenant's slots (limits_sm_test.go).
	slot bool
}

type zmHeld struct {
	worker string
	lease  Lease
}

type zModel struct {
	ctx      context.Context
	clk      *clock.Fake
	q        *Queue // faulty
	truth    *Queue // no faults
	jobs     map[ID]*zmJob
	order    []ID
	held     []zmHeld
	pointers []LaneLease // lanes some worker believes it holds (Keep)
	inj      *kv.FaultyDB
	raw      kv.Database
	steps    int64
	// marked are the IDs each enqueue marker lists, by its name (the
	// first job's ID of the calls that wrote it); markers in order.
	marked  map[ID]map[ID]bool
	markers []ID
	// repeats and unpointed count the IDs enqueued again and the lanes
	// whose pointer was deleted, for the log.
	repeats, unpointed int64
	// limits are the tenants' limits as last set (limits_sm_test.go),
	// limitSets how many times they were set, maxLeased the most jobs of
	// one tenant seen leased under a concurrency limit, by the limit.
	limits    map[string]*zmLimits
	limitSets int64
	maxLeased map[int]int
	// claimFrom is the clock before the claim took applies (its start
	// times lie between it and the clock after).
	claimFrom time.Time
	// For the move and adopt steps (move_sm_test.go): the queue's options,
	// subspace and faults, the tenants moved within the database (their
	// ZoneSpace), a counter naming fresh subspaces, and the counts.
	opts   Options
	space  tuple.Subspace
	faults kv.Faults
	place  map[string]tuple.Subspace
	gen    int64
	mv     zmMoveStats
}

func newZModel(rt *rapid.T, raw kv.Database, faulty *kv.FaultyDB, space tuple.Subspace, clk *clock.Fake) *zModel {
	ctx := context.Background()
	own := space.Sub("tenant-data")
	place := map[string]tuple.Subspace{}
	opts := Options{
		Clock: clk, Backoff: func(a int) time.Duration { return time.Duration(a) * 10 * time.Second },
		MaxLease: time.Minute, ZoneLanes: 2, MaxZoneLanes: 4,
		// The repairs of pointerless lanes (unpoint) warn at every step.
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		TaskTypes: map[string]TaskTypeOptions{zsmType: {}},
		ZoneSpace: func(itemSpace string) tuple.Subspace {
			if p, ok := place[itemSpace]; ok {
				return p
			}
			if itemSpace == "t2" {
				return own.Sub(itemSpace)
			}
			return space.Sub(int64(zoneSchema), "z", itemSpace)
		},
	}
	q, err := Open(ctx, faulty, space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	truth, err := Open(ctx, raw, space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	return &zModel{ctx: ctx, clk: clk, q: q, truth: truth, jobs: map[ID]*zmJob{}, inj: faulty, raw: raw, marked: map[ID]map[ID]bool{}, maxLeased: map[int]int{},
		opts: opts, space: space, place: place}
}

func (m *zModel) activeUnique(key string) *zmJob {
	for _, id := range m.order {
		j := m.jobs[id]
		if j.state == zmPending && j.unique == key && key != "" {
			return j
		}
	}
	return nil
}

// enqueue enqueues a batch that mixes given and generated IDs and may
// repeat IDs, and may be retried with the IDs the first call returned.
// Idempotency is per call, as Enqueue documents: a call's marker is named
// by its first job's ID and lists the IDs the calls of that name stored. So
// a batch repeats IDs the way a retry does: its first job takes the name of
// an earlier call (issue 22: Enqueue(A) then Enqueue(A, B, <no ID>) stored
// neither B nor the generated one), and later jobs repeat IDs that name
// lists, or the job just before them in the batch. A repeated ID comes back
// a duplicate under its own ID; a duplicate is reported only with the ID
// of a stored job.
func (m *zModel) enqueue(rt *rapid.T) {
	n := rapid.IntRange(1, 5).Draw(rt, "n")
	var in []NewJob
	var listed map[ID]bool // what the marker this call reads lists
	for i := 0; i < n; i++ {
		j := NewJob{
			ID:          m.q.NewID(),
			TaskType:    zsmType,
			ItemSpace:   rapid.SampledFrom(zsmTenants).Draw(rt, "tenant"),
			Priority:    Priority(rapid.IntRange(1, 3).Draw(rt, "prio")),
			Delay:       time.Duration(rapid.SampledFrom([]int{0, 0, 5, 60}).Draw(rt, "delay")) * time.Second,
			MaxAttempts: rapid.IntRange(1, 3).Draw(rt, "max"),
			Payload:     []byte(fmt.Sprint("p", i)),
		}
		switch rapid.IntRange(0, 9).Draw(rt, "size") {
		case 0:
			j.Payload = bytes.Repeat([]byte{byte(i)}, 60_000) // over every inline and byte budget
		case 1:
			j.Payload = bytes.Repeat([]byte{byte(i)}, InlinePayload+1) // just kept beside the key
		}
		repeat := false
		switch kind := rapid.IntRange(0, 5).Draw(rt, "idkind"); {
		case kind == 0:
			j.ID = ID{} // generated by Enqueue
		case kind == 1 && i == 0 && len(m.markers) > 0:
			j.ID = rapid.SampledFrom(m.markers).Draw(rt, "name")
			listed, repeat = m.marked[j.ID], true
		case kind == 1 && i > 0 && len(listed) > 0:
			j.ID = rapid.SampledFrom(sortedIDs(listed)).Draw(rt, "again")
			repeat = true
		case kind == 2 && i > 0 && !in[i-1].ID.IsZero() && in[i-1].UniqueKey == "":
			// (A job with a unique key may not be stored: its ID then
			// names no job.)
			j.ID, repeat = in[i-1].ID, true // twice in one batch
		}
		if !repeat && rapid.IntRange(0, 3).Draw(rt, "uniq") == 0 {
			j.UniqueKey = rapid.SampledFrom(zsmUniqueKeys).Draw(rt, "ukey")
		}
		in = append(in, j)
	}
	now := m.clk.Now()
	res, err := m.q.Enqueue(m.ctx, in...)
	if err != nil {
		rt.Fatalf("enqueue: %v", err)
	}
	if len(res) != len(in) {
		rt.Fatalf("enqueue of %d jobs returned %d results", len(in), len(res))
	}
	storedHere := map[ID]bool{}
	var stored []ID
	uniqueDup := make([]bool, len(in))
	for i, r := range res {
		j := in[i]
		if !j.ID.IsZero() && (listed[j.ID] || storedHere[j.ID]) {
			if !r.Duplicate || r.ID != j.ID {
				rt.Fatalf("job %d repeats ID %s, enqueue returned %+v", i, j.ID, r)
			}
			m.repeats++
			continue
		}
		if holder := m.activeUnique(j.UniqueKey); holder != nil {
			if !r.Duplicate || r.ID != holder.id {
				rt.Fatalf("unique key of %d bytes held by %s, enqueue returned %+v", len(j.UniqueKey), holder.id, r)
			}
			uniqueDup[i] = true
			continue
		}
		if r.Duplicate || (!j.ID.IsZero() && r.ID != j.ID) || r.ID.IsZero() || m.jobs[r.ID] != nil {
			rt.Fatalf("enqueue of a new job (ID given: %v) returned %+v", !j.ID.IsZero(), r)
		}
		m.jobs[r.ID] = &zmJob{id: r.ID, tenant: j.ItemSpace, prio: j.Priority, unique: j.UniqueKey,
			maxAttempts: j.MaxAttempts, vestAt: now.Add(j.Delay), payload: j.Payload}
		m.order = append(m.order, r.ID)
		storedHere[r.ID] = true
		stored = append(stored, r.ID)
	}
	for _, r := range res {
		if r.Duplicate && m.jobs[r.ID] == nil {
			rt.Fatalf("a duplicate reported with ID %s, which no stored job has", r.ID)
		}
	}
	// The call's marker is named by its first job's ID, known when it was
	// given or came back as that job's own.
	name := in[0].ID
	if name.IsZero() && !uniqueDup[0] {
		name = res[0].ID
	}
	if name.IsZero() {
		return
	}
	m.mark(name, stored)
	if rapid.Bool().Draw(rt, "retry") {
		// The caller retries with the IDs it was given back (a job whose
		// unique key was held keeps what it had).
		for i := range in {
			if !uniqueDup[i] {
				in[i].ID = res[i].ID
			}
		}
		again, err := m.q.Enqueue(m.ctx, in...)
		if err != nil {
			rt.Fatalf("re-enqueue: %v", err)
		}
		for i, r := range again {
			if !r.Duplicate || r.ID != res[i].ID {
				rt.Fatalf("re-enqueue with the IDs returned: %+v, first %+v", r, res[i])
			}
		}
	}
}

// mark records the IDs a call named name stored (its marker's list).
func (m *zModel) mark(name ID, stored []ID) {
	if len(stored) == 0 {
		return
	}
	if m.marked[name] == nil {
		m.marked[name] = map[ID]bool{}
		m.markers = append(m.markers, name)
	}
	for _, id := range stored {
		m.marked[name][id] = true
	}
}

func sortedIDs(set map[ID]bool) []ID {
	out := make([]ID, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// took checks the jobs a claim returned against the model and applies them.
func (m *zModel) took(rt *rapid.T, worker string, res Claimed, maxN int) {
	now := m.clk.Now()
	if len(res.Jobs) > maxN {
		rt.Fatalf("claim took %d jobs, Max %d", len(res.Jobs), maxN)
	}
	for i, l := range res.Jobs {
		j := m.jobs[l.ID]
		if j == nil || j.state != zmPending || j.vestAt.After(now) {
			rt.Fatalf("claim returned job %s the model does not hold claimable: %+v", l.ID, j)
		}
		if j.attempts >= j.maxAttempts {
			rt.Fatalf("claim ran job %s past its %d attempts", l.ID, j.maxAttempts)
		}
		first := res.Jobs[0]
		if l.ItemSpace != first.ItemSpace || l.Priority != first.Priority || l.zl == nil || first.zl == nil || l.zl.lane.lane != first.zl.lane.lane {
			rt.Fatalf("one claim took jobs of two lanes: %s and %s (job %d)", first.zl.lane, l.zl.lane, i)
		}
		if l.ItemSpace != j.tenant || !bytes.Equal(l.Payload, j.payload) {
			rt.Fatalf("job %s came back with tenant %q and %d payload bytes, model %q and %d", l.ID, l.ItemSpace, len(l.Payload), j.tenant, len(j.payload))
		}
		j.attempts++
		if l.Attempt != j.attempts {
			rt.Fatalf("job %s attempt %d, model %d", l.ID, l.Attempt, j.attempts)
		}
		if !bytes.Equal(l.Checkpoint, j.checkpoint) {
			rt.Fatalf("job %s resumed from checkpoint %q, want %q", l.ID, l.Checkpoint, j.checkpoint)
		}
		j.leased, j.token, j.vestAt = true, leasetoken.Of(l), l.Deadline
		j.slot = m.slotted(j.tenant)
		m.held = append(m.held, zmHeld{worker: worker, lease: l})
	}
	m.checkLimits(rt, res, now)
	// Jobs whose attempts ran out while their holders vanished went to the
	// dead letters instead: find them through the truth.
	dead := res.DeadLettered
	for _, id := range m.order {
		j := m.jobs[id]
		if dead == 0 {
			break
		}
		if j.state == zmPending && j.attempts >= j.maxAttempts && !j.vestAt.After(now) {
			if m.isDead(rt, j.id) {
				j.state, j.leased = zmDead, false
				dead--
			}
		}
	}
	if dead != 0 {
		rt.Fatalf("claim reported %d dead letters the model cannot find", dead)
	}
	if res.Lane != nil {
		m.pointers = append(m.pointers, *res.Lane)
	}
}

// isDead reads whether a job's dead letter is stored.
func (m *zModel) isDead(rt *rapid.T, id ID) bool {
	var dead bool
	err := m.raw.ReadTransact(m.ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(m.truth.k.jobKey(id)).Get()
		if err != nil || v == nil {
			return err
		}
		var rec record
		if err := rec.unmarshal(v); err != nil {
			return err
		}
		dead = rec.State == stateDead
		return nil
	})
	if err != nil {
		rt.Fatalf("read the record of %s: %v", id, err)
	}
	return dead
}

func (m *zModel) claim(rt *rapid.T) {
	worker := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	maxN := rapid.IntRange(1, 20).Draw(rt, "max")
	keep := rapid.Bool().Draw(rt, "keep")
	m.claimFrom = m.clk.Now()
	res, err := m.q.Consumer().Claim(m.ctx, ClaimOptions{
		TaskType: zsmType, Holder: worker, Max: maxN, Lease: zsmLease,
		Peek: 64, Keep: keep,
	})
	if err != nil {
		rt.Fatalf("claim: %v", err)
	}
	m.took(rt, worker, res, maxN)
}

// continueHeld claims again on a lane a worker kept.
func (m *zModel) continueHeld(rt *rapid.T) {
	if len(m.pointers) == 0 {
		rt.Skip("no lane kept")
	}
	i := rapid.IntRange(0, len(m.pointers)-1).Draw(rt, "ptr")
	p := m.pointers[i]
	m.pointers = append(m.pointers[:i], m.pointers[i+1:]...)
	maxN := rapid.IntRange(1, 20).Draw(rt, "max")
	m.claimFrom = m.clk.Now()
	res, err := m.q.Consumer().Claim(m.ctx, ClaimOptions{
		TaskType: zsmType, Holder: p.Holder, Max: maxN, Lease: zsmLease,
		Lane: &p, Keep: rapid.Bool().Draw(rt, "keep"),
	})
	if IsLaneLost(err) {
		return // its lease lapsed and another worker took the lane
	}
	if err != nil {
		rt.Fatalf("continue on a kept lane: %v", err)
	}
	m.took(rt, p.Holder, res, maxN)
}

func (m *zModel) handBack(rt *rapid.T) {
	if len(m.pointers) == 0 {
		rt.Skip("no lane kept")
	}
	i := rapid.IntRange(0, len(m.pointers)-1).Draw(rt, "ptr")
	p := m.pointers[i]
	m.pointers = append(m.pointers[:i], m.pointers[i+1:]...)
	if err := m.q.Consumer().ReleaseLane(m.ctx, p); err != nil && !IsLaneLost(err) {
		rt.Fatalf("hand back a kept lane: %v", err)
	}
}

func (m *zModel) current(h zmHeld) bool {
	j := m.jobs[h.lease.ID]
	return j != nil && j.state == zmPending && j.leased && j.token == leasetoken.Of(h.lease)
}

func (m *zModel) pickHeld(rt *rapid.T) (int, bool) {
	if len(m.held) == 0 {
		return 0, false
	}
	return rapid.IntRange(0, len(m.held)-1).Draw(rt, "held"), true
}

func (m *zModel) dropHeld(i int) { m.held = append(m.held[:i], m.held[i+1:]...) }

func (m *zModel) ack(kind AckKind) func(*rapid.T) {
	return func(rt *rapid.T) {
		i, ok := m.pickHeld(rt)
		if !ok {
			rt.Skip("no lease held")
		}
		h := m.held[i]
		cur := m.current(h)
		now := m.clk.Now()
		reason := "boom"
		if rapid.IntRange(0, 3).Draw(rt, "longerr") == 0 {
			reason = zsmLongError
		}
		res, err := m.q.Ack(m.ctx, Ack{Lease: h.lease, Kind: kind, Error: reason, Delay: 15 * time.Second})
		if len(res) != 1 {
			rt.Fatalf("%s: %v", kind, err)
		}
		m.dropHeld(i)
		m.acked(rt, h, cur, kind, res[0], now)
	}
}

func (m *zModel) shutdown(rt *rapid.T) {
	w := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	var mine []zmHeld
	var acks []Ack
	keep := m.held[:0]
	for _, h := range m.held {
		if h.worker == w {
			mine = append(mine, h)
			acks = append(acks, Ack{Lease: h.lease, Kind: AckRelease})
		} else {
			keep = append(keep, h)
		}
	}
	m.held = keep
	if len(acks) == 0 {
		rt.Skip("the worker holds no lease")
	}
	cur := make([]bool, len(mine))
	for i, h := range mine {
		cur[i] = m.current(h)
	}
	now := m.clk.Now()
	res, err := m.q.Ack(m.ctx, acks...)
	if len(res) != len(acks) {
		rt.Fatalf("shutdown release: %v", err)
	}
	for i, h := range mine {
		m.acked(rt, h, cur[i], AckRelease, res[i], now)
	}
}

func (m *zModel) acked(rt *rapid.T, h zmHeld, cur bool, kind AckKind, res AckResult, now time.Time) {
	if !cur {
		if !IsLeaseLost(res.Err) {
			rt.Fatalf("%s under a stale lease of %s: %+v, want lease lost", kind, h.lease.ID, res)
		}
		return
	}
	if res.Err != nil {
		rt.Fatalf("%s under the current lease of %s: %v", kind, h.lease.ID, res.Err)
	}
	j := m.jobs[h.lease.ID]
	j.leased = false
	switch kind {
	case AckComplete:
		j.state = zmDone
	case AckDeadLetter:
		j.state = zmDead
	case AckFail:
		if j.attempts >= j.maxAttempts {
			if !res.Dead {
				rt.Fatalf("fail on the last attempt did not dead-letter %s", j.id)
			}
			j.state = zmDead
			return
		}
		if res.Dead {
			rt.Fatalf("fail on attempt %d of %d dead-lettered %s", j.attempts, j.maxAttempts, j.id)
		}
		j.vestAt = now.Add(15 * time.Second)
	case AckSnooze:
		j.attempts--
		j.vestAt = now.Add(15 * time.Second)
	case AckRelease:
		j.attempts--
		j.vestAt = now
	}
	if !res.RunAt.IsZero() && !res.RunAt.Equal(j.vestAt.Truncate(time.Millisecond)) {
		rt.Fatalf("%s: runs at %v, model %v", kind, res.RunAt, j.vestAt)
	}
}

func (m *zModel) extend(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	h := m.held[i]
	cur := m.current(h)
	l, err := m.q.Extend(m.ctx, h.lease, zsmLease)
	if !cur {
		if !IsLeaseLost(err) {
			rt.Fatalf("extend under a stale lease: %v", err)
		}
		m.dropHeld(i)
		return
	}
	if err != nil {
		rt.Fatalf("extend: %v", err)
	}
	m.held[i].lease = l
	m.jobs[l.ID].vestAt = l.Deadline
	m.jobs[l.ID].token = leasetoken.Of(l)
}

func (m *zModel) checkpoint(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	h := m.held[i]
	cur := m.current(h)
	state := []byte(fmt.Sprint("step-", rapid.IntRange(0, 100).Draw(rt, "step")))
	if rapid.IntRange(0, 4).Draw(rt, "bigckpt") == 0 {
		state = bytes.Repeat(state, 300) // kept beside the key
	}
	l, err := m.q.Checkpoint(m.ctx, h.lease, state, zsmLease)
	if !cur {
		if !IsLeaseLost(err) {
			rt.Fatalf("checkpoint under a stale lease: %v", err)
		}
		m.dropHeld(i)
		return
	}
	if err != nil {
		rt.Fatalf("checkpoint: %v", err)
	}
	m.held[i].lease = l
	j := m.jobs[l.ID]
	j.vestAt, j.checkpoint, j.token = l.Deadline, state, leasetoken.Of(l)
}

func (m *zModel) cancel(rt *rapid.T) {
	if len(m.order) == 0 {
		rt.Skip("no jobs")
	}
	j := m.jobs[rapid.SampledFrom(m.order).Draw(rt, "job")]
	err := m.q.Cancel(m.ctx, j.id)
	if j.state == zmDone {
		if !IsNotFound(err) {
			rt.Fatalf("cancel of a finished job: %v", err)
		}
		return
	}
	if err != nil {
		rt.Fatalf("cancel %s: %v", j.id, err)
	}
	j.state, j.leased = zmDone, false
}

func (m *zModel) setLanes(rt *rapid.T) {
	tenant := rapid.SampledFrom(zsmTenants).Draw(rt, "tenant")
	n := rapid.IntRange(1, 4).Draw(rt, "lanes")
	if err := m.q.SetZoneLanes(m.ctx, zsmType, tenant, n); err != nil {
		rt.Fatalf("set %d lanes for %q: %v", n, tenant, err)
	}
}

// unpoint deletes the pointer of an unleased lane holding jobs, as a copy of
// a tenant's subspace without the pointer index leaves it (issue 22, item
// 3), then enqueues a job that lands in that very lane (its ID drawn until
// the zone's lane count places it there): the enqueue must not trust the
// lane state alone but put the pointer back, which the check after this
// step verifies with every other lane's (a pointer missing fails it), and
// the final drain claims the lane's jobs through it.
func (m *zModel) unpoint(rt *rapid.T) {
	tenant := rapid.SampledFrom(zsmTenants).Draw(rt, "tenant")
	info, err := m.truth.ZoneInfo(m.ctx, zsmType, tenant)
	if err != nil {
		rt.Fatalf("zone info of %q: %v", tenant, err)
	}
	var cands []ZoneLaneInfo
	for _, li := range info.LaneStates {
		if !li.Leased && !li.PointerMissing && li.Lane < info.Lanes && li.ReadyJobs+li.ScheduledJobs+li.LeasedJobs > 0 {
			cands = append(cands, li)
		}
	}
	if len(cands) == 0 {
		rt.Skip("no unleased lane with jobs that a new job can land in")
	}
	li := rapid.SampledFrom(cands).Draw(rt, "lane")
	l := laneRef{z: m.truth.zoneOf(zsmType, tenant), prio: li.Priority, lane: li.Lane}
	err = m.raw.Transact(m.ctx, func(tr kv.Transaction) error {
		v, err := tr.Get(l.stateKey()).Get()
		if err != nil {
			return err
		}
		var st laneState
		if v == nil || st.unmarshal(v) != nil || st.leased() {
			return fmt.Errorf("lane %s: state %q changed under the model", l, v)
		}
		tr.Clear(m.truth.pointerKeyOf(l, st.PtrMs))
		return nil
	})
	if err != nil {
		rt.Fatalf("delete the pointer of %s: %v", l, err)
	}
	var id ID
	for tries := 0; ; tries++ {
		if id = m.q.NewID(); laneOfID(id, info.Lanes) == li.Lane {
			break
		}
		if tries > 10_000 {
			rt.Fatalf("no ID in 10,000 lands in lane %d of %d", li.Lane, info.Lanes)
		}
	}
	now := m.clk.Now()
	in := NewJob{ID: id, TaskType: zsmType, ItemSpace: tenant, Priority: li.Priority, MaxAttempts: 2, Payload: []byte("unpointed")}
	res, err := m.q.Enqueue(m.ctx, in)
	if err != nil || len(res) != 1 || res[0].Duplicate || res[0].ID != id {
		rt.Fatalf("enqueue into the lane without its pointer: %+v, %v", res, err)
	}
	m.jobs[id] = &zmJob{id: id, tenant: tenant, prio: li.Priority, maxAttempts: 2, vestAt: now, payload: in.Payload}
	m.order = append(m.order, id)
	m.mark(id, []ID{id})
	m.unpointed++
}

func (m *zModel) vanish(rt *rapid.T) {
	w := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	keep := m.held[:0]
	for _, h := range m.held {
		if h.worker != w {
			keep = append(keep, h)
		}
	}
	m.held = keep
	ps := m.pointers[:0]
	for _, p := range m.pointers {
		if p.Holder != w {
			ps = append(ps, p)
		}
	}
	m.pointers = ps
}

func (m *zModel) advance(rt *rapid.T) {
	m.clk.Advance(time.Duration(rapid.SampledFrom([]int{1, 5, 20, 31, 61}).Draw(rt, "secs")) * time.Second)
}

func (m *zModel) toDeadline(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	m.clk.Set(m.held[i].lease.Deadline)
}

// zsmKey is a job key found in the database.
type zsmKey struct {
	lane laneRef
	jk   zjobKey
	v    zjobValue
}

// scan reads every zone, lane state and pointer of the model's task type
// straight from the database and checks the pointer invariant.
func (m *zModel) scan(rt *rapid.T) map[ID]zsmKey { return m.scanOf(rt, m.truth, m.raw) }

// scanOf scans the queue truth over raw (another one a tenant moved to).
func (m *zModel) scanOf(rt *rapid.T, truth *Queue, raw kv.Database) map[ID]zsmKey {
	nowMs := m.clk.Now().UnixMilli()
	found := map[ID]zsmKey{}
	type laneInfo struct {
		earliest int64
		state    *laneState
	}
	lanes := map[string]*laneInfo{}
	laneRefs := map[string]laneRef{}
	pointers := map[string]bool{}
	err := raw.ReadTransact(m.ctx, func(tr kv.ReadTransaction) error {
		for _, tenant := range zsmTenants {
			z := truth.zoneOf(zsmType, tenant)
			kvs, err := tr.GetRange(z.jobs(), kv.RangeOptions{}).GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range kvs {
				jk, err := z.parseJobKey(p.Key)
				if err != nil {
					rt.Fatalf("job key does not parse: %v", err)
				}
				var v zjobValue
				if err := v.unmarshal(p.Value); err != nil {
					rt.Fatalf("job value does not decode: %v", err)
				}
				if _, dup := found[jk.ID]; dup {
					rt.Fatalf("job %s has two keys", jk.ID)
				}
				l := laneRef{z: z, prio: jk.Priority, lane: jk.Lane}
				found[jk.ID] = zsmKey{lane: l, jk: jk, v: v}
				k := string(l.stateKey())
				li := lanes[k]
				if li == nil {
					li = &laneInfo{earliest: jk.VestMs}
					lanes[k], laneRefs[k] = li, l
				}
				li.earliest = min(li.earliest, jk.VestMs)
			}
			states, err := tr.GetRange(rangeOf(z.space.Sub(int64(zLane))), kv.RangeOptions{}).GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range states {
				var s laneState
				if err := s.unmarshal(p.Value); err != nil {
					rt.Fatalf("lane state does not decode: %v", err)
				}
				t, err := z.space.Unpack(p.Key)
				if err != nil || len(t) != 3 {
					rt.Fatalf("lane state key %v", t)
				}
				l := laneRef{z: z, prio: Priority(t[1].(int64)), lane: int(t[2].(int64))}
				k := string(l.stateKey())
				li := lanes[k]
				if li == nil {
					// A lane state without jobs is allowed (the lane
					// emptied; the next claim that picks it removes it).
					li = &laneInfo{earliest: -1}
					lanes[k], laneRefs[k] = li, l
				}
				li.state = &s
				pk := string(truth.pointerKeyOf(l, s.PtrMs))
				pointers[pk] = false
			}
		}
		ptrs, err := tr.GetRange(rangeOf(truth.zk.ptr.Sub(zsmType)), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range ptrs {
			if _, ok := pointers[string(p.Key)]; !ok {
				e, _ := truth.zk.parsePointer(p)
				rt.Fatalf("pointer %+v has no lane state naming it", e)
			}
			pointers[string(p.Key)] = true
		}
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
	for k, li := range lanes {
		l := laneRefs[k]
		if li.state == nil {
			rt.Fatalf("lane %s holds jobs but has no lane state", l)
		}
		if !pointers[string(truth.pointerKeyOf(l, li.state.PtrMs))] {
			rt.Fatalf("lane %s: its lane state names pointer ms %d, which is missing", l, li.state.PtrMs)
		}
		// An unleased pointer is vested when its lane has a vested job, and
		// otherwise vests no later than the lane's earliest job. (A lane
		// handed back with vested jobs left goes to the back of the vested
		// pointers, at the hand-back's time: later than its earliest job.)
		// A lane parked at its tenant's limits has its pointer at most
		// 5 s ahead, whatever its jobs (limits_sm_test.go).
		if li.state.Parked && !li.state.leased() && li.state.PtrMs > nowMs+5_000 {
			rt.Fatalf("lane %s: parked until %d, over 5 s after now %d", l, li.state.PtrMs, nowMs)
		}
		if li.earliest >= 0 && !li.state.leased() && !li.state.Parked && li.state.PtrMs > max(li.earliest, nowMs) {
			rt.Fatalf("lane %s: its unleased pointer vests at %d, after its earliest job at %d (now %d)", l, li.state.PtrMs, li.earliest, nowMs)
		}
	}
	return found
}

func (m *zModel) check(rt *rapid.T) {
	m.steps++
	now := m.clk.Now()
	found := m.scan(rt)
	dead, err := m.truth.ListDead(m.ctx, ListDeadOptions{TaskType: zsmType, Limit: 100_000})
	if err != nil {
		rt.Fatal(err)
	}
	deadIDs := map[ID]bool{}
	for _, d := range dead.Jobs {
		deadIDs[d.ID] = true
	}
	for _, id := range m.order {
		j := m.jobs[id]
		k, live := found[id]
		switch j.state {
		case zmPending:
			if !live {
				rt.Fatalf("job %s lost: the model holds it pending (%+v)", id, *j)
			}
			if k.lane.z.itemSpace != j.tenant || k.jk.Priority != j.prio {
				rt.Fatalf("job %s is in zone %q at %s, model %q at %s", id, k.lane.z.itemSpace, k.jk.Priority, j.tenant, j.prio)
			}
			wantLeased := j.leased && j.vestAt.After(now)
			isLeased := k.v.Token != 0 && k.jk.VestMs > now.UnixMilli()
			if isLeased != wantLeased {
				rt.Fatalf("job %s leased=%v, model leased=%v vest=%v now=%v", id, isLeased, wantLeased, j.vestAt, now)
			}
			if k.jk.VestMs != j.vestAt.UnixMilli() {
				rt.Fatalf("job %s vests at %v, model %v", id, time.UnixMilli(k.jk.VestMs), j.vestAt)
			}
			delete(found, id)
		case zmDead:
			if live || !deadIDs[id] {
				rt.Fatalf("job %s should be dead (live=%v dead=%v)", id, live, deadIDs[id])
			}
			delete(deadIDs, id)
		case zmDone:
			if live || deadIDs[id] {
				rt.Fatalf("finished job %s still stored (live=%v dead=%v)", id, live, deadIDs[id])
			}
		}
	}
	if len(found) != 0 || len(deadIDs) != 0 {
		rt.Fatalf("the queue holds jobs the model does not: %d live, %d dead", len(found), len(deadIDs))
	}
}

// drain runs every remaining job to completion: nothing may be stuck.
func (m *zModel) drain(rt *rapid.T) {
	m.check(rt)
	m.inj.SetEnabled(false)
	m.clearLimits(rt)
	for round := 0; round < 200; round++ {
		m.clk.Advance(10 * time.Minute)
		res, err := m.truth.Consumer().Claim(m.ctx, ClaimOptions{
			TaskType: zsmType, Holder: "drain", Max: 1000, Lease: zsmLease,
			Peek: 64,
		})
		if err != nil {
			rt.Fatal(err)
		}
		for _, l := range res.Jobs {
			if err := m.truth.Complete(m.ctx, l); err != nil {
				rt.Fatalf("drain complete: %v", err)
			}
			m.jobs[l.ID].state = zmDone
		}
		if len(res.Jobs) == 0 && res.DeadLettered == 0 && res.NextVest.IsZero() {
			break
		}
	}
	var stuck []string
	for _, id := range m.order {
		j := m.jobs[id]
		if j.state == zmPending && j.attempts < j.maxAttempts {
			stuck = append(stuck, id.String())
		}
	}
	sort.Strings(stuck)
	if len(stuck) > 0 {
		rt.Fatalf("jobs never ran again: %v", stuck)
	}
}
