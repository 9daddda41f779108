package quick

import (
	"context"
	"errors"
	"time"

	"pgregory.net/rapid"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Moves and adoption in the zones state machine (issue 24).
//
// The "move" step moves a tenant, with its jobs pending, delayed and
// leased, while claims and acks run at the model's queue between the
// move's steps and every commit may fault:
//
//   - within the database: to another subspace of the queue's database
//     (a second handle whose ZoneSpace places the tenant there); the model
//     follows, its queue placing the tenant there from then on;
//   - between two databases: to a queue on a second database, where the
//     model checks every job it holds pending is stored, the pointer
//     invariant holds and nothing else is there, and back again.
//
// A move may be interrupted (its context cancelled after a step) and is
// then resumed. Throughout: a claim at the model's queue takes no job of
// the tenant before the destination is adopted (the fence); an ack of a
// lease taken before the move either succeeds (the job is gone, which the
// checks verify: no stale-token write) or fails with ErrLeaseLost, and the
// job then runs again at the destination with its next attempt; after the
// move no lease taken before it is current, and the checks and the final
// drain find every job not finished where the model expects it (0 lost).
//
// The "adopt" step copies a tenant's zone keys byte for byte into another
// queue (in the same database or a second one), as a user's tool would,
// adopts them under faults and drains that queue on a clock of its own:
// every copied job is claimed exactly once with its next attempt, or
// dead-lettered when its lapsed lease had taken its last attempt.

// zmMoveStats count what the move, adopt and delete steps did, for the
// log.
type zmMoveStats struct {
	Moves, Between, Interrupted, LostAtMove, Adopts, Adopted, Deletes, Deleted int64
}

func (a zmMoveStats) add(b zmMoveStats) zmMoveStats {
	a.Moves += b.Moves
	a.Between += b.Between
	a.Interrupted += b.Interrupted
	a.LostAtMove += b.LostAtMove
	a.Adopts += b.Adopts
	a.Adopted += b.Adopted
	a.Deletes += b.Deletes
	a.Deleted += b.Deleted
	return a
}

// zmSide is a queue on another database or subspace: q injects faults,
// truth does not.
type zmSide struct {
	q, truth *Queue
	raw      kv.Database
}

// openSide opens a queue on raw with the model's options but clk and zs.
func (m *zModel) openSide(rt *rapid.T, raw kv.Database, space tuple.Subspace, zs func(string) tuple.Subspace, clk *clock.Fake) *zmSide {
	opts := m.opts
	opts.Clock, opts.ZoneSpace = clk, zs
	f := m.faults
	f.Seed = rapid.Uint64().Draw(rt, "sideseed")
	f.Advance = clk.Advance
	q, err := Open(m.ctx, kv.WithFaults(raw, f), space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	truth, err := Open(m.ctx, raw, space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	return &zmSide{q: q, truth: truth, raw: raw}
}

// moveOrAdopt is one step of the state machine, drawn as often as the
// others but acting at three in seven of them, as a move, an adoption or
// a deletion (delete_sm_test.go): each costs tens of transactions, and
// more of them would lengthen the state machine's run by more than a
// fifth.
func (m *zModel) moveOrAdopt(rt *rapid.T) {
	switch rapid.IntRange(0, 6).Draw(rt, "op") {
	case 0:
		m.adopt(rt)
	case 1:
		m.move(rt)
	case 2:
		m.deleteTenant(rt)
	default:
		rt.Skip("neither a move, an adoption nor a deletion this time")
	}
}

// move moves a tenant within the database or to a second one and back.
func (m *zModel) move(rt *rapid.T) {
	tenant := rapid.SampledFrom(m.busyTenants()).Draw(rt, "tenant")
	m.mv.Moves++
	if !rapid.Bool().Draw(rt, "between") {
		m.gen++
		dest := m.space.Sub("moved", m.gen, tenant)
		opts := m.opts
		home := opts.ZoneSpace
		opts.ZoneSpace = func(is string) tuple.Subspace {
			if is == tenant {
				return dest
			}
			return home(is)
		}
		to, err := Open(m.ctx, m.inj, m.space, opts)
		if err != nil {
			rt.Fatal(err)
		}
		m.moveTenant(rt, tenant, m.q, to, true)
		m.place[tenant] = dest
		return
	}
	m.mv.Between++
	b := memkv.Open(memkv.Options{})
	away := m.openSide(rt, b, m.space, m.opts.ZoneSpace, m.clk)
	m.moveTenant(rt, tenant, m.q, away.q, false)
	m.checkAway(rt, away, tenant)
	m.moveTenant(rt, tenant, away.q, m.q, true)
}

// busyTenants are the tenants a move tests most: those holding a job
// under a lease not yet lapsed (whose revocation counts), else those
// holding pending jobs (which the fence keeps from claims), else all.
func (m *zModel) busyTenants() []string {
	now := m.clk.Now()
	var leased, pending []string
	for _, t := range zsmTenants {
		l, p := false, false
		for _, id := range m.order {
			if j := m.jobs[id]; j.tenant == t && j.state == zmPending {
				p = true
				l = l || (j.leased && j.vestAt.After(now))
			}
		}
		if l {
			leased = append(leased, t)
		}
		if p {
			pending = append(pending, t)
		}
	}
	switch {
	case len(leased) > 0:
		return leased
	case len(pending) > 0:
		return pending
	}
	return zsmTenants
}

// moveTenant moves tenant from to to, both faulty, with claims and acks at
// the model's queue after each of the move's steps; toHome says whether
// to is the model's queue (whose claims may take the tenant's jobs once
// the destination is adopted).
func (m *zModel) moveTenant(rt *rapid.T, tenant string, from, to *Queue, toHome bool) {
	// The leases taken before the move: none is current after it.
	before := map[ID]uint64{}
	for _, id := range m.order {
		if j := m.jobs[id]; j.tenant == tenant && j.state == zmPending && j.leased {
			before[id] = j.token
		}
	}
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	stopAt := rapid.IntRange(0, 8).Draw(rt, "interrupt") // 0: never
	adopted, hooks := false, 0
	revoke := func() {
		for id, tok := range before {
			if j := m.jobs[id]; j.state == zmPending && j.token == tok {
				j.leased, j.token = false, 0
			}
		}
	}
	hook := func(_, step string) error {
		hooks++
		switch step {
		case stepCopy:
			// Every job is copied, its lease revoked: it holds no slot
			// of the destination's limits.
			revoke()
		case stepAdopt:
			adopted = true
			if l := m.limits[tenant]; l != nil && toHome && from != m.q {
				// Back from another database: the rate's state stayed
				// there, and starts afresh here.
				l.starts = nil
			}
		}
		m.duringMove(rt, tenant, toHome && adopted, before)
		if hooks == stopAt {
			cancel()
		}
		return nil
	}
	opts := MoveOptions{TaskType: zsmType, Batch: rapid.IntRange(2, 16).Draw(rt, "batch"), afterStep: hook}
	_, err := from.MoveTenant(ctx, tenant, to, opts)
	if err != nil && errors.Is(err, context.Canceled) && stopAt > 0 {
		m.mv.Interrupted++
		m.duringMove(rt, tenant, toHome && adopted, before)
		_, err = from.MoveTenant(m.ctx, tenant, to, opts)
	}
	if err != nil {
		rt.Fatalf("move %q: %v", tenant, err)
	}
	revoke()
}

// duringMove claims at the model's queue and acks a lease of the moving
// tenant taken before the move. claimable says whether the tenant's jobs
// may be claimed there yet.
func (m *zModel) duringMove(rt *rapid.T, tenant string, claimable bool, before map[ID]uint64) {
	if m.claimDuring(rt, "move", "mvworker", tenant, claimable, before) {
		// Fenced or copied: the job runs again at the destination.
		m.mv.LostAtMove++
	}
}

// checkAway checks the queue a tenant moved to holds exactly the jobs the
// model holds pending for it, where the model expects them, with every
// lane's pointer in place.
func (m *zModel) checkAway(rt *rapid.T, away *zmSide, tenant string) {
	found := m.scanOf(rt, away.truth, away.raw)
	for _, id := range m.order {
		j := m.jobs[id]
		if j.tenant != tenant || j.state != zmPending {
			continue
		}
		k, ok := found[id]
		if !ok {
			rt.Fatalf("job %s of %q lost in its move", id, tenant)
		}
		if k.jk.Priority != j.prio || k.jk.VestMs != j.vestAt.UnixMilli() || k.v.Token != 0 || int(k.v.Attempt) != j.attempts {
			rt.Fatalf("job %s moved as %+v %+v, model %+v", id, k.jk, k.v, *j)
		}
		delete(found, id)
	}
	if len(found) != 0 {
		rt.Fatalf("the destination holds %d jobs the model does not", len(found))
	}
}

// adopt copies a tenant's zone keys into another queue, adopts them and
// drains that queue.
func (m *zModel) adopt(rt *rapid.T) {
	tenant := rapid.SampledFrom(zsmTenants).Draw(rt, "tenant")
	clk := clock.NewFake(m.clk.Now())
	var raw kv.Database = m.raw
	m.gen++
	space := m.space.Sub("adopt", m.gen)
	if rapid.Bool().Draw(rt, "between") {
		raw = memkv.Open(memkv.Options{})
	}
	side := m.openSide(rt, raw, space, func(is string) tuple.Subspace { return space.Sub("tz", is) }, clk)
	from, to := m.truth.zoneOf(zsmType, tenant).space, side.q.zoneOf(zsmType, tenant).space
	var kvs []kv.KeyValue
	err := m.raw.ReadTransact(m.ctx, func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = tr.GetRange(rangeOf(from), kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		rt.Fatal(err)
	}
	for len(kvs) > 0 {
		n := min(len(kvs), 50)
		err := raw.Transact(m.ctx, func(tr kv.Transaction) error {
			for _, p := range kvs[:n] {
				tr.Set(append(append([]byte{}, to.Bytes()...), p.Key[len(from.Bytes()):]...), p.Value)
			}
			return nil
		})
		if err != nil {
			rt.Fatal(err)
		}
		kvs = kvs[n:]
	}
	want := map[ID]*zmJob{}
	for _, id := range m.order {
		if j := m.jobs[id]; j.tenant == tenant && j.state == zmPending {
			want[id] = j
		}
	}
	res, err := side.q.AdoptTenant(m.ctx, tenant, AdoptOptions{TaskType: zsmType, Batch: rapid.IntRange(1, 8).Draw(rt, "batch")})
	if err != nil {
		rt.Fatalf("adopt %q: %v", tenant, err)
	}
	if res.Jobs != int64(len(want)) {
		rt.Fatalf("adopted %d jobs of %q, the model holds %d", res.Jobs, tenant, len(want))
	}
	m.mv.Adopts++
	m.mv.Adopted += res.Jobs
	// Past every delay, lease and backoff: each job comes once.
	clk.Advance(time.Hour)
	claimed, dead := map[ID]bool{}, 0
	for range 100 {
		c, err := side.truth.Consumer().Claim(m.ctx, ClaimOptions{TaskType: zsmType, Holder: "adopter", Max: 1000, Lease: zsmLease, Peek: 64})
		if err != nil {
			rt.Fatal(err)
		}
		for _, l := range c.Jobs {
			j := want[l.ID]
			if j == nil || claimed[l.ID] || l.Attempt != j.attempts+1 || j.attempts >= j.maxAttempts {
				rt.Fatalf("the adopted queue gave %s attempt %d (model %+v, claimed before %v)", l.ID, l.Attempt, j, claimed[l.ID])
			}
			claimed[l.ID] = true
			if err := side.truth.Complete(m.ctx, l); err != nil {
				rt.Fatal(err)
			}
		}
		dead += c.DeadLettered
		if len(c.Jobs) == 0 && c.DeadLettered == 0 {
			break
		}
	}
	for id, j := range want {
		if !claimed[id] && j.attempts < j.maxAttempts {
			rt.Fatalf("adopted job %s of %q never claimed (%+v)", id, tenant, *j)
		}
	}
	if len(claimed)+dead != len(want) {
		rt.Fatalf("adopted %d jobs: %d claimed, %d dead-lettered", len(want), len(claimed), dead)
	}
}
