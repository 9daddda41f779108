package quick

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// Fairness counted in claims (issue 22, item 6; docs/design.md, "Choosing a
// pointer"): one tenant whose jobs fill 64 lanes against small tenants of
// one job each that arrive in the same second, claims of one job each by one
// claimer, no timing: the figure is how many rounds (a round being one claim
// per lane with work when the small tenants arrived) pass until the last
// small tenant is claimed. Every trial is reproducible from its seed: the
// job IDs, the tenants' names and acquire's random choices come from it.
//
// The trials vary the clock, since the bound must hold whatever it reads:
// frozen at the first ms of a second (where new work and hand-backs were
// filed alike before the fix), frozen mid-second, and moving 1 or 7 ms a
// claim from late in a second, so that the small tenants arrive in the
// next second behind the hot lanes handed back in the one before.
//
// Before the small tenants arrive, the hot tenant is claimed warm claims
// (more than a round of its 64 lanes): its lanes are then filed both as new
// work and as handed back, as they are in a queue that runs.
//
// QUICKFDB_FAIRNESS_TRIALS sets the trials per case: by default 5 with 20
// small tenants and 1 with 1,000, so that `go test -race ./...` stays fast;
// CI runs 100 of each, without -race, as the guard that fails when the
// small tenants' wait regresses (.ci/run).

// fairnessClock is how a trial's clock moves.
type fairnessClock struct {
	name    string
	startMs int64         // from zcEpoch, the first ms of a second
	step    time.Duration // per claim; 0: frozen
}

var fairnessClocks = []fairnessClock{
	{"frozen at a second's first ms", 0, 0},
	{"frozen mid-second", 500, 0},
	{"1ms a claim from late in a second", 950, time.Millisecond},
	{"7ms a claim", 900, 7 * time.Millisecond},
}

const (
	fairHotLanes = 64
	fairHotJobs  = 16 * fairHotLanes // enough for every hot lane to last the trial
	fairWarm     = 100               // hot claims before the small tenants arrive
	fairMaxClaim = 1
)

// fairnessTrial runs one trial and returns the rounds until the last small
// tenant was claimed (claims since they arrived / lanes with work then).
func fairnessTrial(t testing.TB, seed uint64, small int, ck fairnessClock) float64 {
	return fairnessTrialOf(t, seed, small, 1, ck)
}

// fairnessTrialOf is fairnessTrial with per jobs for each small tenant,
// all in one lane of its zone: after its first claim, a small tenant's
// lane is handed back with work, as the hot tenant's are.
func fairnessTrialOf(t testing.TB, seed uint64, small, per int, ck fairnessClock) float64 {
	t.Helper()
	e := newZCEnv(t, Options{ZoneLanes: fairHotLanes, MaxZoneLanes: fairHotLanes})
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	e.q.pickRand = rng.Uint64
	e.clk.Set(zcEpoch.Add(time.Duration(ck.startMs) * time.Millisecond))
	newID := func() ID {
		var s [10]byte
		binary.LittleEndian.PutUint64(s[:8], rng.Uint64())
		binary.LittleEndian.PutUint16(s[8:], uint16(rng.Uint32()))
		return DeterministicID(e.clk.Now(), s)
	}
	hot := make([]NewJob, fairHotJobs)
	for i := range hot {
		hot[i] = NewJob{TaskType: "email", ItemSpace: "hot", ID: newID()}
	}
	for i := 0; i < len(hot); i += 500 {
		e.enqueue(t, hot[i:min(i+500, len(hot))]...)
	}
	claim := func() []Lease {
		c := e.claim(t, ClaimOptions{Max: fairMaxClaim, Lease: 10 * time.Minute})
		e.clk.Advance(ck.step)
		return c.Jobs
	}
	for range fairWarm {
		if len(claim()) != 1 {
			t.Fatal("a warm-up claim took no hot job")
		}
	}
	waiting := map[ID]bool{}
	jobs := make([]NewJob, 0, small*per)
	for i := range small {
		first := newID()
		for j := range per {
			id := first
			for j > 0 && (id == first || laneOfID(id, fairHotLanes) != laneOfID(first, fairHotLanes)) {
				id = newID()
			}
			jobs = append(jobs, NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("small-%d-%d", seed, i), ID: id})
			waiting[id] = true
		}
	}
	for i := 0; i < len(jobs); i += 500 {
		e.enqueue(t, jobs[i:min(i+500, len(jobs))]...)
	}
	lanes := fairHotLanes + small // every hot lane still has work: 16 jobs each on average
	for n := 1; ; n++ {
		got := claim()
		if len(got) == 0 {
			t.Fatalf("claim %d found nothing with %d small tenants waiting", n, len(waiting))
		}
		for _, l := range got {
			delete(waiting, l.ID)
		}
		if len(waiting) == 0 {
			return float64(n) / float64(lanes)
		}
		if n > 20*lanes {
			t.Fatalf("%d small tenants not claimed after 20 rounds", len(waiting))
		}
	}
}

// fairnessTrials is QUICKFDB_FAIRNESS_TRIALS or def.
func fairnessTrials(t testing.TB, def int) int {
	if s := os.Getenv("QUICKFDB_FAIRNESS_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("QUICKFDB_FAIRNESS_TRIALS=%q: want a positive count", s)
		}
		return n
	}
	return def
}

func TestFairnessSmallTenantsWithinTwoRoundsCountedInClaims(t *testing.T) {
	for _, c := range []struct {
		small, trials int
	}{
		{20, fairnessTrials(t, 5)},
		{1000, fairnessTrials(t, 1)},
	} {
		for _, ck := range fairnessClocks {
			t.Run(fmt.Sprintf("%d small, %s", c.small, ck.name), func(t *testing.T) {
				rounds := make([]float64, c.trials)
				within := 0
				for i := range rounds {
					rounds[i] = fairnessTrial(t, uint64(i+1), c.small, ck)
					if rounds[i] <= 2 {
						within++
					}
				}
				sort.Float64s(rounds)
				q := func(p float64) float64 { return rounds[min(len(rounds)-1, int(p*float64(len(rounds))))] }
				t.Logf("%d trials: last small tenant claimed after %.2f rounds (min), %.2f (median), %.2f (p90), %.2f (max); %d within 2 rounds",
					c.trials, rounds[0], q(0.5), q(0.9), rounds[len(rounds)-1], within)
				// The target (issue 22): within 2 rounds in at least 99% of
				// the trials. The filing rule gives more: new work is
				// claimed before any lane handed back after it, so the last
				// small tenant comes within one round.
				if float64(within) < 0.99*float64(c.trials) {
					t.Errorf("only %d of %d trials claimed every small tenant within 2 rounds", within, c.trials)
				}
			})
		}
	}
}

// A lane handed back with vested jobs stays where it was filed when an
// enqueue whose clock reads behind the claimer's places a job in it: the
// enqueue takes the pointer for a future one by its own clock, but the lane
// state says it was filed vested (laneState.Vested). Pulled earlier, it
// would jump among its second's new work, ahead of the lanes waiting, and
// the enqueue's write would make the next claim of the lane conflict.
func TestEnqueueBehindTheClaimersClockLeavesAHandedBackLaneWhereItIs(t *testing.T) {
	e := newZCEnv(t, Options{})
	e.clk.Set(zcEpoch.Add(500 * time.Millisecond))
	// The enqueuer: the same queue, its clock 5 ms behind the claimer's.
	slow := clock.NewFake(e.clk.Now().Add(-5 * time.Millisecond))
	eq, err := Open(e.ctx, e.db, e.q.space, Options{Clock: slow})
	if err != nil {
		t.Fatal(err)
	}
	e.enqueue(t, NewJob{TaskType: "email", ItemSpace: "hot"}, NewJob{TaskType: "email", ItemSpace: "hot"})
	e.clk.Advance(20 * time.Millisecond)
	slow.Advance(20 * time.Millisecond)
	if c := e.claim(t, ClaimOptions{Max: 1}); len(c.Jobs) != 1 || !c.More {
		t.Fatalf("claim = %+v, want one job and more left", c)
	}
	l := laneRef{z: e.q.zoneOf("email", "hot"), prio: Normal, lane: 0}
	back := handBackMs(e.clk.Now().UnixMilli())
	if s, ok := e.laneState(t, l); !ok || s.PtrMs != back || !s.Vested || s.leased() {
		t.Fatalf("lane state after the hand-back = %+v, want unleased, vested, at %d", s, back)
	}
	if _, err := eq.Enqueue(e.ctx, NewJob{TaskType: "email", ItemSpace: "hot"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.laneState(t, l); s.PtrMs != back {
		t.Fatalf("the enqueue moved the handed-back lane's pointer to %d, want it left at %d (behind the lanes waiting)", s.PtrMs, back)
	}
	if e.get(t, e.q.pointerKeyOf(l, back)) == nil {
		t.Fatal("the pointer entry is gone from where the lane state says")
	}
}

// A small tenant with two jobs in one lane is handed back after its first
// claim, like the hot tenant's lanes: its second job comes within the
// round that follows, since a hand-back goes behind every lane handed back
// before it. That holds while the clock moves between hand-backs (lanes
// handed back in the same ms are in random order among themselves), so
// only moving clocks are tried. Filing a second's hand-backs together, in
// random order, made such a tenant wait behind the hot lanes again and
// again (docs/performance.md, "Fairness within a second").
func TestFairnessTwoJobTenantsWithinThreeRoundsCountedInClaims(t *testing.T) {
	trials := fairnessTrials(t, 5)
	for _, ck := range fairnessClocks {
		if ck.step == 0 {
			continue
		}
		t.Run(ck.name, func(t *testing.T) {
			rounds := make([]float64, trials)
			within := 0
			for i := range rounds {
				rounds[i] = fairnessTrialOf(t, uint64(i+1), 20, 2, ck)
				if rounds[i] <= 3 {
					within++
				}
			}
			sort.Float64s(rounds)
			t.Logf("%d trials: last job of 20 two-job tenants claimed after %.2f rounds (min), %.2f (median), %.2f (max); %d within 3 rounds",
				trials, rounds[0], rounds[len(rounds)/2], rounds[len(rounds)-1], within)
			if float64(within) < 0.99*float64(trials) {
				t.Errorf("only %d of %d trials claimed every two-job tenant within 3 rounds", within, trials)
			}
		})
	}
}
