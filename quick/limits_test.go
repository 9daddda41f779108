package quick

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// Tests of tenant limits (limits.go, limitgate.go). Time is the fake
// clock's; nothing sleeps.

func (e *zcEnv) jobsOf(t testing.TB, tenant string, n int) {
	t.Helper()
	for i := 0; i < n; i += 500 {
		batch := make([]NewJob, min(500, n-i))
		for j := range batch {
			batch[j] = NewJob{TaskType: "email", ItemSpace: tenant}
		}
		e.enqueue(t, batch...)
	}
}

func (e *zcEnv) complete(t testing.TB, ls ...Lease) {
	t.Helper()
	if len(ls) == 0 {
		return
	}
	acks := make([]Ack, len(ls))
	for i, l := range ls {
		acks[i] = Ack{Lease: l, Kind: AckComplete}
	}
	if _, err := e.q.Ack(e.ctx, acks...); err != nil {
		t.Fatal(err)
	}
}

func (e *zcEnv) running(t testing.TB, tenant string) int64 {
	t.Helper()
	return readLE64(e.get(t, runningKey(e.q.k.limitState("email", tenant))))
}

func setLimits(t testing.TB, q *Queue, tenant string, l Limits) {
	t.Helper()
	if err := q.SetTenantLimits(context.Background(), "email", tenant, l); err != nil {
		t.Fatal(err)
	}
}

// A concurrency limit L is never exceeded by claims, whatever Max asks; a
// tenant without limits in the same task type is not held back; the
// limited tenant's lane, parked, does not bring claimers back before a
// slot frees.
func TestLimitConcurrencyHeld(t *testing.T) {
	e := newZCEnv(t, Options{})
	setLimits(t, e.q, "a", Limits{Concurrency: 3})
	e.jobsOf(t, "a", 40)
	e.jobsOf(t, "b", 20)
	rng := rand.New(rand.NewPCG(1, 2))
	var held []Lease
	runningA, doneA, doneB := 0, 0, 0
	for step := 0; doneA < 40 || doneB < 20; step++ {
		if step > 2000 {
			t.Fatalf("stuck: a done %d, b done %d, a running %d", doneA, doneB, runningA)
		}
		c := e.claim(t, ClaimOptions{Max: 5})
		for _, l := range c.Jobs {
			if l.ItemSpace == "a" {
				runningA++
				if !l.zl.slot {
					t.Fatal("a lease of a limited tenant carries no slot")
				}
			} else if l.zl.slot {
				t.Fatal("a lease of a tenant without limits carries a slot")
			}
			held = append(held, l)
		}
		if runningA > 3 {
			t.Fatalf("step %d: %d jobs of a running, limit 3", step, runningA)
		}
		// Finish a random part of what runs.
		rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
		k := rng.IntN(len(held) + 1)
		for _, l := range held[:k] {
			if l.ItemSpace == "a" {
				runningA--
				doneA++
			} else {
				doneB++
			}
		}
		e.complete(t, held[:k]...)
		held = held[k:]
		e.clk.Advance(time.Millisecond)
	}
	if got := e.running(t, "a"); got != 0 {
		t.Fatalf("running slots of a after all finished: %d, want 0", got)
	}
}

// A limited tenant's lane is parked: the claim after the one that found
// the tenant full takes no lane, and says when to look again; an enqueue
// for the tenant does not pull the parked pointer back; an ack that frees
// a slot wakes it.
func TestLimitParkedLaneStaysParked(t *testing.T) {
	e := newZCEnv(t, Options{})
	setLimits(t, e.q, "a", Limits{Concurrency: 1})
	e.jobsOf(t, "a", 3)
	first := e.claim(t, ClaimOptions{Max: 3})
	if len(first.Jobs) != 1 {
		t.Fatalf("claimed %d, want 1 (the limit)", len(first.Jobs))
	}
	c := e.claim(t, ClaimOptions{Max: 3})
	if len(c.Jobs) != 0 || c.Lane != nil {
		t.Fatalf("a claim of a full tenant took %d jobs, lane %v", len(c.Jobs), c.Lane)
	}
	if !c.NextVest.After(e.clk.Now()) {
		t.Fatalf("next vest %v is not after now %v: the lane is not parked", c.NextVest, e.clk.Now())
	}
	e.jobsOf(t, "a", 1) // an enqueue leaves the parked pointer where it is
	if c := e.claim(t, ClaimOptions{Max: 3}); len(c.Jobs) != 0 || !c.NextVest.After(e.clk.Now()) {
		t.Fatalf("after an enqueue: claimed %d, next vest %v (now %v): the enqueue unparked the lane", len(c.Jobs), c.NextVest, e.clk.Now())
	}
	// A worker sleeps on the task type until the parked pointer's time:
	// the ack that wakes the lane wakes it too.
	e.write(t, func(tr kv.Transaction) {
		tr.Set(e.q.k.sleepKey("email"), le64(e.clk.Now().Add(time.Hour).UnixMilli()))
	})
	e.complete(t, first.Jobs...) // frees the slot and wakes the lane
	if w := readLE64(e.get(t, e.q.k.wakeKey("email"))); w != 1 {
		t.Fatalf("wake key %d after the ack that woke the lane, want 1", w)
	}
	if c := e.claim(t, ClaimOptions{Max: 3}); len(c.Jobs) != 1 {
		t.Fatalf("after the ack: claimed %d, want 1", len(c.Jobs))
	}
}

// newZCEnvOnTestTime is newZCEnv on an engine whose clock is the test's
// fake clock, so that a transaction's timeout (a claim's 2 s, retries
// included) is measured in the test's time, not the machine's: a test of
// racing transactions that is not about time must not fail because a
// loaded machine took 2 s to get through their conflicts.
func newZCEnvOnTestTime(t testing.TB, opts Options) *zcEnv {
	t.Helper()
	clk := clock.NewFake(zcEpoch)
	raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk})
	db := kv.WithCounters(raw)
	opts.Clock = clk
	q, err := Open(context.Background(), db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &zcEnv{q: q, db: db, clk: clk, ctx: context.Background()}
}

// Several consumers racing never run more than L jobs of the tenant.
func TestLimitConcurrencyRacingConsumers(t *testing.T) {
	// On the test's time: four consumers racing for two slots conflict
	// and retry, and with both cores busy (-race, go test -count=20) a
	// claim's retries outlasted its 2 s real-time timeout once in 20
	// (fdb error 1031).
	e := newZCEnvOnTestTime(t, Options{})
	const limit, jobs = 2, 60
	setLimits(t, e.q, "a", Limits{Concurrency: limit})
	e.jobsOf(t, "a", jobs)
	var running, peak, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for tries := 0; done.Load() < jobs; tries++ {
				if tries > 20000 {
					errs <- errors.New("stuck")
					return
				}
				c, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 1 + rng.IntN(3), Lease: 10 * time.Minute})
				if err != nil {
					errs <- err
					return
				}
				// Counted once committed, uncounted before the ack commits:
				// the count is never above what the database holds leased.
				n := running.Add(int64(len(c.Jobs)))
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				running.Add(-int64(len(c.Jobs)))
				if len(c.Jobs) > 0 {
					acks := make([]Ack, len(c.Jobs))
					for i, l := range c.Jobs {
						acks[i] = Ack{Lease: l, Kind: AckComplete}
					}
					if _, err := e.q.Ack(e.ctx, acks...); err != nil {
						errs <- err
						return
					}
					done.Add(int64(len(c.Jobs)))
				} else {
					e.clk.Advance(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("peak running %d over the limit %d", p, limit)
	}
	if got := e.running(t, "a"); got != 0 {
		t.Fatalf("running slots after all finished: %d", got)
	}
}

// A holder that dies gives its slots back when its leases lapse; until
// then the tenant starts nothing.
func TestLimitSlotsRecoveredAfterHolderDies(t *testing.T) {
	e := newZCEnv(t, Options{})
	setLimits(t, e.q, "a", Limits{Concurrency: 2})
	e.jobsOf(t, "a", 5)
	dead := e.claim(t, ClaimOptions{Max: 5, Lease: 10 * time.Second, Holder: "dies"})
	if len(dead.Jobs) != 2 {
		t.Fatalf("claimed %d, want 2", len(dead.Jobs))
	}
	e.clk.Advance(9 * time.Second)
	if c := e.claim(t, ClaimOptions{Max: 5}); len(c.Jobs) != 0 {
		t.Fatalf("claimed %d before the dead holder's leases lapsed", len(c.Jobs))
	}
	e.clk.Advance(2 * time.Second) // past the deadline (and the park)
	var got []Lease
	for range 5 {
		c := e.claim(t, ClaimOptions{Max: 5, Lease: time.Minute})
		got = append(got, c.Jobs...)
		e.clk.Advance(10 * time.Millisecond)
	}
	if len(got) != 2 {
		t.Fatalf("after the lapse claimed %d, want 2 (the freed slots)", len(got))
	}
	if n := e.running(t, "a"); n != 2 {
		t.Fatalf("running slots %d, want 2", n)
	}
	// The dead holder's late ack changes nothing: its leases are lost.
	if _, err := e.q.Ack(e.ctx, Ack{Lease: dead.Jobs[0], Kind: AckComplete}); err == nil {
		// The job may be another's now, or vested again: a lost lease.
		t.Log("the dead holder's ack found its job (not taken since)")
	}
	if n := e.running(t, "a"); n != 2 {
		t.Fatalf("running slots after the late ack %d, want 2", n)
	}
}

// A renewed lease keeps its slot: it does not lapse at the first deadline.
func TestLimitExtendMovesTheSlot(t *testing.T) {
	e := newZCEnv(t, Options{})
	setLimits(t, e.q, "a", Limits{Concurrency: 1})
	e.jobsOf(t, "a", 2)
	c := e.claim(t, ClaimOptions{Max: 2, Lease: 10 * time.Second})
	if len(c.Jobs) != 1 {
		t.Fatalf("claimed %d, want 1", len(c.Jobs))
	}
	e.clk.Advance(8 * time.Second)
	l, err := e.q.Extend(e.ctx, c.Jobs[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(8 * time.Second) // past the first deadline, and the park
	for range 3 {
		if c := e.claim(t, ClaimOptions{Max: 2}); len(c.Jobs) != 0 {
			t.Fatalf("claimed %d while the renewed lease runs", len(c.Jobs))
		}
		e.clk.Advance(6 * time.Second)
	}
	e.complete(t, l)
	if n := e.running(t, "a"); n != 0 {
		t.Fatalf("running slots %d after the ack, want 0", n)
	}
}

// A rate limit R with burst B: over simulated time no window of W seconds
// sees more than B + R·W starts, and a saturating tenant gets R a second.
func TestLimitRate(t *testing.T) {
	e := newZCEnv(t, Options{})
	const rate, burst = 5.0, 3
	setLimits(t, e.q, "a", Limits{Rate: rate, Burst: burst})
	e.jobsOf(t, "a", 300)
	var starts []time.Time
	start := e.clk.Now()
	claims := 0
	for e.clk.Now().Sub(start) < 20*time.Second {
		c := e.claim(t, ClaimOptions{Max: 10})
		claims++
		for range c.Jobs {
			starts = append(starts, e.clk.Now())
		}
		e.complete(t, c.Jobs...)
		e.clk.Advance(20 * time.Millisecond)
	}
	for i := range starts {
		for j := i; j < len(starts); j++ {
			w := starts[j].Sub(starts[i]).Seconds()
			if n := j - i + 1; float64(n) > burst+rate*w+1e-9 {
				t.Fatalf("%d starts in %.3f s: over burst %d + rate %v", n, w, burst, rate)
			}
		}
	}
	want := rate * 20
	if n := float64(len(starts)); n < 0.95*want || n > want+burst {
		t.Fatalf("%v starts in 20 s, want within 5%% of %v (+ the burst)", n, want)
	}
	t.Logf("%d starts in 20 s at rate %v burst %d; %d claims", len(starts), rate, burst, claims)
}

// Weights 1:3 between two saturating tenants give them 25/75 of the
// claims, within ±5% (relative).
func TestLimitWeights(t *testing.T) {
	e := newZCEnv(t, Options{MaxZoneLanes: 1})
	e.q.pickRand = rand.New(rand.NewPCG(3, 4)).Uint64
	if err := e.q.SetTypeLimits(e.ctx, "email", Limits{Weight: 1}); err != nil {
		t.Fatal(err)
	}
	setLimits(t, e.q, "b", Limits{Weight: 3})
	const claims = 4000
	e.jobsOf(t, "a", claims)
	e.jobsOf(t, "b", claims)
	n := map[string]int{}
	for range claims {
		c := e.claim(t, ClaimOptions{Max: 1})
		for _, l := range c.Jobs {
			n[l.ItemSpace]++
		}
		e.complete(t, c.Jobs...)
		e.clk.Advance(time.Millisecond)
	}
	share := float64(n["a"]) / float64(n["a"]+n["b"])
	t.Logf("a %d, b %d: a's share %.4f", n["a"], n["b"], share)
	if share < 0.25*0.95 || share > 0.25*1.05 {
		t.Fatalf("a's share %.4f, want 0.25 ± 5%%", share)
	}
}

// Limits changed by another process take effect within limitsRefresh,
// while claims go on: raised, then lowered.
func TestLimitChangedWhileClaiming(t *testing.T) {
	e := newZCEnv(t, Options{})
	other, err := Open(e.ctx, e.db, e.q.space, Options{Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	setLimits(t, other, "a", Limits{Concurrency: 1})
	e.jobsOf(t, "a", 10)
	held := e.claim(t, ClaimOptions{Max: 10}).Jobs
	if len(held) != 1 {
		t.Fatalf("claimed %d, want 1", len(held))
	}
	setLimits(t, other, "a", Limits{Concurrency: 3})
	e.clk.Advance(limitsRefresh + parkMaxMs*time.Millisecond)
	for range 3 {
		held = append(held, e.claim(t, ClaimOptions{Max: 10}).Jobs...)
	}
	if len(held) != 3 {
		t.Fatalf("after raising the limit to 3: %d running", len(held))
	}
	setLimits(t, other, "a", Limits{Concurrency: 2})
	e.clk.Advance(limitsRefresh)
	e.complete(t, held[0])
	held = held[1:]
	if c := e.claim(t, ClaimOptions{Max: 10}); len(c.Jobs) != 0 {
		t.Fatalf("after lowering the limit to 2 with 2 running, claimed %d", len(c.Jobs))
	}
	if err := other.ClearTenantLimits(e.ctx, "email", "a"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(limitsRefresh + parkMaxMs*time.Millisecond)
	if c := e.claim(t, ClaimOptions{Max: 10}); len(c.Jobs) != 7 {
		t.Fatalf("after clearing the limit: claimed %d, want the 7 left", len(c.Jobs))
	}
}

// Defaults per task type apply to every tenant; an override replaces them
// field by field, and NoLimit lifts one.
func TestLimitDefaultsAndOverrides(t *testing.T) {
	e := newZCEnv(t, Options{})
	if err := e.q.SetTypeLimits(e.ctx, "email", Limits{Concurrency: 2, Rate: 10}); err != nil {
		t.Fatal(err)
	}
	setLimits(t, e.q, "big", Limits{Concurrency: NoLimit, Weight: 4})
	info, err := e.q.GetLimits(e.ctx, "email", "big")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{Concurrency: NoLimit, Rate: 10, Weight: 4}); info.Effective != want || info.Override == nil {
		t.Fatalf("effective %+v, want %+v", info.Effective, want)
	}
	e.jobsOf(t, "small", 5)
	e.jobsOf(t, "big", 5)
	n := map[string]int{}
	for range 6 {
		c := e.claim(t, ClaimOptions{Max: 5})
		for _, l := range c.Jobs {
			n[l.ItemSpace]++
		}
	}
	if n["small"] != 2 || n["big"] != 5 {
		t.Fatalf("claimed %v, want small 2 (the default) and big 5", n)
	}
	for _, bad := range []Limits{{Concurrency: -2}, {Rate: -0.5}, {Weight: 1001}, {Burst: -1}} {
		if err := e.q.SetTenantLimits(e.ctx, "email", "x", bad); !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("%+v: %v, want ErrInvalidOption", bad, err)
		}
	}
	ls, more, err := e.q.ListTenantLimits(e.ctx, "email", "", true, 10)
	if err != nil || more || len(ls) != 1 || ls[0].ItemSpace != "big" {
		t.Fatalf("list: %+v more %v err %v", ls, more, err)
	}
}

// A task type without limits reads nothing per claim for them.
func TestLimitNoneReadsNothingPerClaim(t *testing.T) {
	e := newZCEnv(t, Options{})
	e.jobsOf(t, "a", 20)
	e.claim(t, ClaimOptions{Max: 1}) // reads the (empty) limits once
	var st kv.Stats
	for range 10 {
		s0 := e.db.Stats()
		c := e.claim(t, ClaimOptions{Max: 1})
		e.complete(t, c.Jobs...)
		st = st.Add(e.db.Stats().Sub(s0))
	}
	if n := e.count(t, rangeOf(e.q.k.root.Sub("ts"))); n != 0 {
		t.Fatalf("%d limit state keys written for a type without limits", n)
	}
	_ = st
}

func FuzzLimitsUnmarshal(f *testing.F) {
	f.Add(Limits{Concurrency: 3, Rate: 2.5, Burst: 4, Weight: 2}.marshal())
	f.Add(Limits{Concurrency: NoLimit, Rate: NoLimit}.marshal())
	f.Add([]byte{})
	f.Add([]byte{0x11, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Limits
		if err := l.unmarshal(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var back Limits
		if err := back.unmarshal(l.marshal()); err != nil || back != l {
			t.Fatalf("round trip of %+v: %+v, %v", l, back, err)
		}
	})
}

// Depth shows each listed tenant's limits and its running jobs against
// its concurrency limit.
func TestLimitDepthShowsRunningAgainstLimit(t *testing.T) {
	e := newZCEnv(t, Options{})
	setLimits(t, e.q, "a", Limits{Concurrency: 2, Rate: 100})
	e.jobsOf(t, "a", 5)
	e.jobsOf(t, "b", 3)
	e.claim(t, ClaimOptions{Max: 5})
	e.claim(t, ClaimOptions{Max: 5})
	d, err := e.q.Depth(e.ctx, DepthOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TenantDepth{}
	for _, td := range d.Tenants {
		got[td.ItemSpace] = td
	}
	if a := got["a"]; a.Running != 2 || a.Limits.Concurrency != 2 || a.Limits.Rate != 100 {
		t.Fatalf("tenant a: running %d, limits %+v", a.Running, a.Limits)
	}
	if b := got["b"]; b.Running != 0 || !b.Limits.IsZero() {
		t.Fatalf("tenant b: running %d, limits %+v", b.Running, b.Limits)
	}
}

// In short-job mode a tenant under a concurrency limit is claimed with
// per-job leases (whose slots follow them), within the limit; a rate caps
// the hand-outs of a short-job lane.
func TestLimitShortJobMode(t *testing.T) {
	e := newZCEnv(t, Options{TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true}}})
	setLimits(t, e.q, "a", Limits{Concurrency: 2})
	setLimits(t, e.q, "r", Limits{Rate: 1, Burst: 3})
	e.jobsOf(t, "a", 6)
	e.jobsOf(t, "r", 6)
	e.jobsOf(t, "free", 6)
	n := map[string]int{}
	short := map[string]int{}
	for range 12 {
		c := e.claim(t, ClaimOptions{Max: 10, Keep: true})
		var done []Lease // a's keep running; the others finish
		for _, l := range c.Jobs {
			n[l.ItemSpace]++
			if l.Short() {
				short[l.ItemSpace]++
			}
			if l.ItemSpace != "a" {
				done = append(done, l)
			}
		}
		e.complete(t, done...)
		if c.Lane != nil {
			if c.Lane.Short {
				if _, err := e.q.Consumer().HandBack(e.ctx, *c.Lane, nil, time.Minute); err != nil && !IsLaneLost(err) {
					t.Fatal(err)
				}
			} else if err := e.q.Consumer().ReleaseLane(e.ctx, *c.Lane); err != nil {
				t.Fatal(err)
			}
		}
		e.clk.Advance(10 * time.Millisecond)
	}
	if n["a"] != 2 || short["a"] != 0 {
		t.Fatalf("tenant a: %d claimed (%d short), want 2 per-job leases", n["a"], short["a"])
	}
	if n["r"] != 3 {
		t.Fatalf("tenant r: %d handed out, want the burst of 3", n["r"])
	}
	if n["free"] != 6 || short["free"] != 6 {
		t.Fatalf("tenant free: %d claimed (%d short), want 6 short", n["free"], short["free"])
	}
}
