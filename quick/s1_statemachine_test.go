package quick_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestStateMachine drives jobs through random interleavings of every queue
// operation, worker disappearances and shutdowns, and clock advances, over a
// database that injects every commit fault kv.WithFaults knows:
// commit_unknown_result (applied and not), spurious conflicts, the
// operation's own timeout and a cancellation striking a commit in flight
// (applied and not), and commits that take 4.5 s of the fake clock. Some
// jobs carry 60 kB payloads, so a transaction that does not bound its bytes
// fails with 2101 (the engine enforces FDB's limits). It checks the queue
// against a model after every step: no job lost or duplicated, no operation
// under a stale lease succeeds or changes anything, attempts and dead
// letters as configured, unique keys unique, checkpoints resumed by the next
// holder. It fails if any fault kind was never injected.
func TestStateMachine(t *testing.T) {
	// Its checks list the jobs with List, which reads the zones layout
	// only since issue 21; statemachine_test.go drives the zones layout,
	// and this schema-1 model goes with schema 1.
	t.Skip("schema 1: List no longer reads the lanes layout")
	var jobs, steps int64
	var faults kv.FaultStats
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
		t.Logf("drove %d jobs through %d checked steps; faults injected: %+v", jobs, steps, faults)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		raw, space := fdbtest.Open(t)
		f := cfg
		f.Seed = rapid.Uint64().Draw(rt, "seed")
		clk := clock.NewFake(epoch)
		f.Advance = clk.Advance
		faulty := kv.WithFaults(raw, f)
		m := newModel(rt, raw, faulty, space, clk)
		rt.Repeat(map[string]func(*rapid.T){
			"enqueue":  m.enqueue,
			"claim":    m.claim,
			"complete": m.ack(quick.AckComplete),
			"fail":     m.ack(quick.AckFail),
			"snooze":   m.ack(quick.AckSnooze),
			"release":  m.ack(quick.AckRelease),
			"dead":     m.ack(quick.AckDeadLetter),
			"extend":   m.extend,
			"ckpt":     m.checkpoint,
			"cancel":   m.cancel,
			"vanish":   m.vanish,
			"shutdown": m.shutdown,
			"advance":  m.advance,
			"deadline": m.toDeadline,
			"":         m.check,
		})
		m.drain(rt)
		jobs += int64(len(m.order))
		steps += m.steps
		faults = add(faults, faulty.Stats())
	})
	// With the default 400 checks every kind is injected dozens of times;
	// a run shortened with -rapid.checks may legitimately miss one.
	if missing := faults.Missing(cfg); len(missing) > 0 && !t.Failed() {
		if n, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String()); n < 100 {
			t.Logf("fault kinds never injected in %d checks: %v", n, missing)
		} else {
			t.Fatalf("fault kinds never injected: %v (the faults are switched off?)", missing)
		}
	}
}

func add(a, b kv.FaultStats) kv.FaultStats {
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

type mstate int

const (
	mPending mstate = iota
	mDone
	mDead
)

type mjob struct {
	id          quick.ID
	state       mstate
	prio        quick.Priority
	unique      string
	maxAttempts int
	attempts    int
	checkpoint  []byte
	vestAt      time.Time // when it may be claimed (lease deadline while leased)
	leased      bool
	token       uint64 // token of the latest lease handed out
}

// heldLease is a lease some worker believes it holds.
type heldLease struct {
	worker string
	lease  quick.Lease
}

type model struct {
	ctx   context.Context
	clk   *clock.Fake
	q     *quick.Queue // faulty
	truth *quick.Queue // no faults, for reading the truth
	jobs  map[quick.ID]*mjob
	order []quick.ID
	held  []heldLease
	inj   *kv.FaultyDB
	steps int64
}

const (
	smLease = 30 * time.Second
	smType  = "sm"
)

func smBackoff(attempt int) time.Duration { return time.Duration(attempt) * 10 * time.Second }

func newModel(rt *rapid.T, raw kv.Database, faulty *kv.FaultyDB, space tuple.Subspace, clk *clock.Fake) *model {
	ctx := context.Background()
	opts := quick.Options{Clock: clk, Lanes: 4, Backoff: smBackoff, MaxLease: time.Minute}
	q, err := quick.Open(ctx, faulty, space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	check, err := quick.Open(ctx, raw, space, opts)
	if err != nil {
		rt.Fatal(err)
	}
	return &model{ctx: ctx, clk: clk, q: q, truth: check, jobs: map[quick.ID]*mjob{}, inj: faulty}
}

func (m *model) activeUnique(key string) *mjob {
	for _, id := range m.order {
		j := m.jobs[id]
		if j.state == mPending && j.unique == key && key != "" {
			return j
		}
	}
	return nil
}

func (m *model) enqueue(rt *rapid.T) {
	n := rapid.IntRange(1, 5).Draw(rt, "n")
	var in []quick.NewJob
	for i := 0; i < n; i++ {
		j := quick.NewJob{
			ID:          m.q.NewID(),
			TaskType:    smType,
			Priority:    quick.Priority(rapid.IntRange(1, 3).Draw(rt, "prio")),
			Delay:       time.Duration(rapid.SampledFrom([]int{0, 0, 5, 60}).Draw(rt, "delay")) * time.Second,
			MaxAttempts: rapid.IntRange(1, 3).Draw(rt, "max"),
			Payload:     []byte(fmt.Sprint("p", i)),
		}
		if rapid.IntRange(0, 9).Draw(rt, "large") == 0 {
			j.Payload = bytes.Repeat([]byte{byte(i)}, 60_000)
		}
		if rapid.IntRange(0, 3).Draw(rt, "uniq") == 0 {
			j.UniqueKey = rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "ukey")
		}
		in = append(in, j)
	}
	// Sometimes retry a whole batch with the same IDs, as a caller would
	// after an error. Times are the queue's before the call: a slow commit
	// moves the clock while it runs.
	now := m.clk.Now()
	res, err := m.q.Enqueue(m.ctx, in...)
	if err != nil {
		rt.Fatalf("enqueue: %v", err)
	}
	for i, r := range res {
		j := in[i]
		if holder := m.activeUnique(j.UniqueKey); holder != nil {
			if !r.Duplicate || r.ID != holder.id {
				rt.Fatalf("unique key %q held by %s, enqueue returned %+v", j.UniqueKey, holder.id, r)
			}
			continue
		}
		if r.Duplicate || r.ID != j.ID {
			rt.Fatalf("enqueue of a new job returned %+v", r)
		}
		m.jobs[j.ID] = &mjob{id: j.ID, prio: j.Priority, unique: j.UniqueKey, maxAttempts: j.MaxAttempts, vestAt: now.Add(j.Delay)}
		m.order = append(m.order, j.ID)
	}
	if rapid.Bool().Draw(rt, "retry") {
		again, err := m.q.Enqueue(m.ctx, in...)
		if err != nil {
			rt.Fatalf("re-enqueue: %v", err)
		}
		for i, r := range again {
			if !r.Duplicate || (in[i].UniqueKey == "" && r.ID != in[i].ID) {
				rt.Fatalf("re-enqueue with the same ID created a job: %+v", r)
			}
		}
	}
}

// claimable lists the jobs the model says a claim may take now.
func (m *model) claimable() []*mjob {
	now := m.clk.Now()
	var out []*mjob
	for _, id := range m.order {
		j := m.jobs[id]
		if j.state == mPending && !j.vestAt.After(now) {
			out = append(out, j)
		}
	}
	return out
}

func (m *model) claim(rt *rapid.T) {
	worker := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	maxN := rapid.IntRange(1, 20).Draw(rt, "max")
	want := m.claimable()
	res, err := m.q.Claim(m.ctx, quick.ClaimOptions{TaskType: smType, Holder: worker, Max: maxN, Lease: smLease, ScanLimit: 1000})
	if err != nil {
		rt.Fatalf("claim: %v", err)
	}
	// Jobs whose attempts ran out while their holders vanished go to the
	// dead letters instead.
	exhausted := 0
	var runnable []*mjob
	for _, j := range want {
		if j.attempts >= j.maxAttempts {
			exhausted++
			continue
		}
		runnable = append(runnable, j)
	}
	if res.DeadLettered > exhausted {
		rt.Fatalf("claim dead-lettered %d jobs, only %d had spent their attempts", res.DeadLettered, exhausted)
	}
	if wantN := min(maxN, len(runnable)); len(res.Jobs) != wantN {
		rt.Fatalf("claim took %d jobs, want %d of %d claimable", len(res.Jobs), wantN, len(runnable))
	}
	worst := quick.High
	for _, l := range res.Jobs {
		j := m.jobs[l.ID]
		if j == nil || j.state != mPending || j.vestAt.After(m.clk.Now()) {
			rt.Fatalf("claim returned job %s the model does not hold claimable: %+v", l.ID, j)
		}
		if j.attempts >= j.maxAttempts {
			rt.Fatalf("claim ran job %s past its %d attempts", l.ID, j.maxAttempts)
		}
		j.attempts++
		if l.Attempt != j.attempts {
			rt.Fatalf("job %s attempt %d, model %d", l.ID, l.Attempt, j.attempts)
		}
		if !bytes.Equal(l.Checkpoint, j.checkpoint) {
			rt.Fatalf("job %s resumed from checkpoint %q, want %q", l.ID, l.Checkpoint, j.checkpoint)
		}
		j.leased, j.token, j.vestAt = true, leasetoken.Of(l), l.Deadline
		m.held = append(m.held, heldLease{worker: worker, lease: l})
		worst = max(worst, l.Priority)
	}
	// A job left behind never outranks one taken.
	if len(res.Jobs) == maxN {
		taken := map[quick.ID]bool{}
		for _, l := range res.Jobs {
			taken[l.ID] = true
		}
		for _, j := range runnable {
			if !taken[j.id] && j.prio < worst {
				rt.Fatalf("claim left %s job %s for a %s one", j.prio, j.id, worst)
			}
		}
	}
	// Now settle the exhausted ones in the model: dead unless taken.
	for _, j := range want {
		if j.attempts >= j.maxAttempts && j.state == mPending && !j.vestAt.After(m.clk.Now()) && res.DeadLettered > 0 {
			info, err := m.truth.Get(m.ctx, j.id)
			if err != nil {
				rt.Fatal(err)
			}
			if info.State == quick.StateDead {
				m.kill(j)
				res.DeadLettered--
			}
		}
	}
	if res.DeadLettered != 0 {
		rt.Fatalf("claim reported dead letters the model cannot find")
	}
}

func (m *model) kill(j *mjob) {
	j.state, j.leased = mDead, false
}

// current reports whether a held lease is the job's latest one.
func (m *model) current(h heldLease) bool {
	j := m.jobs[h.lease.ID]
	return j != nil && j.state == mPending && j.leased && j.token == leasetoken.Of(h.lease)
}

func (m *model) pickHeld(rt *rapid.T) (int, bool) {
	if len(m.held) == 0 {
		return 0, false
	}
	return rapid.IntRange(0, len(m.held)-1).Draw(rt, "held"), true
}

func (m *model) dropHeld(i int) { m.held = append(m.held[:i], m.held[i+1:]...) }

func (m *model) ack(kind quick.AckKind) func(*rapid.T) {
	return func(rt *rapid.T) {
		i, ok := m.pickHeld(rt)
		if !ok {
			rt.Skip("no lease held")
		}
		h := m.held[i]
		cur := m.current(h)
		a := quick.Ack{Lease: h.lease, Kind: kind, Error: "boom", Delay: 15 * time.Second}
		now := m.clk.Now()
		res, err := m.q.Ack(m.ctx, a)
		if len(res) != 1 {
			rt.Fatalf("%s: %v", kind, err)
		}
		m.dropHeld(i)
		m.acked(rt, h, cur, kind, res[0], now)
	}
}

// shutdown releases every lease a worker holds in one Ack call, as a
// worker does when it stops: the call splits them into bounded batches.
func (m *model) shutdown(rt *rapid.T) {
	w := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	var mine []heldLease
	var acks []quick.Ack
	keep := m.held[:0]
	for _, h := range m.held {
		if h.worker == w {
			mine = append(mine, h)
			acks = append(acks, quick.Ack{Lease: h.lease, Kind: quick.AckRelease})
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
		m.acked(rt, h, cur[i], quick.AckRelease, res[i], now)
	}
}

// acked checks one ack's result against the model and applies it; now is
// the queue's time before the call.
func (m *model) acked(rt *rapid.T, h heldLease, cur bool, kind quick.AckKind, res quick.AckResult, now time.Time) {
	{
		if !cur {
			if !quick.IsLeaseLost(res.Err) {
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
		case quick.AckComplete:
			j.state = mDone
		case quick.AckDeadLetter:
			m.kill(j)
		case quick.AckFail:
			if j.attempts >= j.maxAttempts {
				if !res.Dead {
					rt.Fatalf("fail on the last attempt did not dead-letter %s", j.id)
				}
				m.kill(j)
				return
			}
			if res.Dead {
				rt.Fatalf("fail on attempt %d of %d dead-lettered %s", j.attempts, j.maxAttempts, j.id)
			}
			j.vestAt = now.Add(15 * time.Second)
		case quick.AckSnooze:
			j.attempts--
			j.vestAt = now.Add(15 * time.Second)
		case quick.AckRelease:
			j.attempts--
			j.vestAt = now
		}
		if !res.RunAt.IsZero() && !res.RunAt.Equal(j.vestAt.Truncate(time.Millisecond)) {
			rt.Fatalf("%s: runs at %v, model %v", kind, res.RunAt, j.vestAt)
		}
	}
}

func (m *model) extend(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	h := m.held[i]
	cur := m.current(h)
	l, err := m.q.Extend(m.ctx, h.lease, smLease)
	if !cur {
		if !quick.IsLeaseLost(err) {
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
}

func (m *model) checkpoint(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	h := m.held[i]
	cur := m.current(h)
	state := []byte(fmt.Sprint("step-", rapid.IntRange(0, 100).Draw(rt, "step")))
	l, err := m.q.Checkpoint(m.ctx, h.lease, state, smLease)
	if !cur {
		if !quick.IsLeaseLost(err) {
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
	j.vestAt, j.checkpoint = l.Deadline, state
}

func (m *model) cancel(rt *rapid.T) {
	if len(m.order) == 0 {
		rt.Skip("no jobs")
	}
	j := m.jobs[rapid.SampledFrom(m.order).Draw(rt, "job")]
	err := m.q.Cancel(m.ctx, j.id)
	if j.state == mDone {
		if !quick.IsNotFound(err) {
			rt.Fatalf("cancel of a finished job: %v", err)
		}
		return
	}
	if err != nil {
		rt.Fatalf("cancel %s: %v", j.id, err)
	}
	j.state, j.leased = mDone, false
}

// vanish drops a worker's leases without telling the queue, as a crash does.
func (m *model) vanish(rt *rapid.T) {
	w := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, "worker")
	keep := m.held[:0]
	for _, h := range m.held {
		if h.worker != w {
			keep = append(keep, h)
		}
	}
	m.held = keep
}

func (m *model) advance(rt *rapid.T) {
	d := time.Duration(rapid.SampledFrom([]int{1, 5, 20, 31, 61}).Draw(rt, "secs")) * time.Second
	// A lapsed lease makes its job claimable again; its holder may still
	// act until someone else claims it (model.current).
	m.clk.Advance(d)
}

// toDeadline moves the clock to exactly a held lease's deadline, where the
// job vests again: a claim there and a release put the job back on that
// lease's very key, which only the token tells apart.
func (m *model) toDeadline(rt *rapid.T) {
	i, ok := m.pickHeld(rt)
	if !ok {
		rt.Skip("no lease held")
	}
	m.clk.Set(m.held[i].lease.Deadline)
}

// check compares the database with the model.
func (m *model) check(rt *rapid.T) {
	m.steps++
	now := m.clk.Now()
	page, err := m.truth.List(m.ctx, quick.ListOptions{TaskType: smType, Limit: 100_000})
	if err != nil {
		rt.Fatal(err)
	}
	seen := map[quick.ID]quick.JobInfo{}
	uniques := map[string]quick.ID{}
	for _, info := range page.Jobs {
		if _, dup := seen[info.ID]; dup {
			rt.Fatalf("job %s has two schedule keys", info.ID)
		}
		seen[info.ID] = info
		if info.UniqueKey != "" {
			if other, ok := uniques[info.UniqueKey]; ok {
				rt.Fatalf("unique key %q held by %s and %s", info.UniqueKey, other, info.ID)
			}
			uniques[info.UniqueKey] = info.ID
		}
	}
	dead, err := m.truth.ListDead(m.ctx, quick.ListDeadOptions{TaskType: smType, Limit: 100_000})
	if err != nil {
		rt.Fatal(err)
	}
	deadIDs := map[quick.ID]bool{}
	for _, d := range dead.Jobs {
		deadIDs[d.ID] = true
	}
	for _, id := range m.order {
		j := m.jobs[id]
		info, live := seen[id]
		switch j.state {
		case mPending:
			if !live {
				info, err := m.truth.Get(m.ctx, id)
				rt.Fatalf("job %s lost: the model holds it pending (%+v); the queue says %+v, %v", id, *j, info, err)
			}
			wantLeased := j.leased && j.vestAt.After(now)
			if (info.State == quick.StateLeased) != wantLeased {
				rt.Fatalf("job %s is %s, model leased=%v vest=%v now=%v", id, info.State, wantLeased, j.vestAt, now)
			}
			if !info.RunAt.Equal(j.vestAt.Truncate(time.Millisecond)) {
				rt.Fatalf("job %s vests at %v, model %v", id, info.RunAt, j.vestAt)
			}
			delete(seen, id)
		case mDead:
			if live || !deadIDs[id] {
				rt.Fatalf("job %s should be dead (live=%v dead=%v)", id, live, deadIDs[id])
			}
			delete(deadIDs, id)
		case mDone:
			if live || deadIDs[id] {
				rt.Fatalf("finished job %s still stored", id)
			}
		}
	}
	if len(seen) != 0 || len(deadIDs) != 0 {
		rt.Fatalf("the queue holds jobs the model does not: %d live, %d dead", len(seen), len(deadIDs))
	}
}

// drain runs every remaining job to completion: nothing may be stuck.
func (m *model) drain(rt *rapid.T) {
	m.check(rt)
	m.inj.SetEnabled(false)
	for round := 0; round < 20; round++ {
		m.clk.Advance(10 * time.Minute)
		res, err := m.truth.Claim(m.ctx, quick.ClaimOptions{TaskType: smType, Holder: "drain", Max: 1000, Lease: smLease, ScanLimit: 5000})
		if err != nil {
			rt.Fatal(err)
		}
		for _, l := range res.Jobs {
			if err := m.truth.Complete(m.ctx, l); err != nil {
				rt.Fatalf("drain complete: %v", err)
			}
			m.jobs[l.ID].state = mDone
		}
		if len(res.Jobs) == 0 && !res.More {
			break
		}
	}
	var stuck []string
	for _, id := range m.order {
		j := m.jobs[id]
		if j.state == mPending && j.attempts < j.maxAttempts {
			stuck = append(stuck, id.String())
		}
	}
	sort.Strings(stuck)
	if len(stuck) > 0 {
		rt.Fatalf("jobs never ran again: %v", stuck)
	}
}
