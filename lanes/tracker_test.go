package lanes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

func TestMain(m *testing.M) { fdbtest.Main(m) }

const (
	period  = time.Second
	timeout = 5 * time.Second
	nLanes  = 64
)

// env is a registry on a fresh subspace with a manual clock.
type env struct {
	t     *testing.T
	db    kv.Database
	space tuple.Subspace
	clock *clock.Fake
	opts  Options
	reg   *Registry
}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	db, space := fdbtest.Open(t)
	clk := clock.NewFake(time.UnixMilli(1_700_000_000_000))
	opts := Options{
		HeartbeatPeriod: period, Timeout: timeout, Clock: clk,
		Logger: slog.New(slog.DiscardHandler), Host: "test-host",
	}
	for _, f := range mod {
		f(&opts)
	}
	return &env{t: t, db: db, space: space, clock: clk, opts: opts, reg: NewRegistry(db, space, opts)}
}

// newClockedEnv is newEnv on a private memkv database whose engine clock is
// the test's fake clock: its read versions advance with the test's time, as a
// cluster's advance with real time, so clocks compare through versions.
func newClockedEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	clk := clock.NewFake(time.UnixMilli(1_700_000_000_000))
	db, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk})
	opts := Options{
		HeartbeatPeriod: period, Timeout: timeout, Clock: clk,
		Logger: slog.New(slog.DiscardHandler), Host: "test-host",
	}
	for _, f := range mod {
		f(&opts)
	}
	return &env{t: t, db: db, space: space, clock: clk, opts: opts, reg: NewRegistry(db, space, opts)}
}

// skewed returns a registry on the same keys whose clock runs off ahead.
func (e *env) skewed(off time.Duration) *Registry {
	o := e.opts
	o.Clock = offsetClock{Clock: e.clock, off: off}
	return NewRegistry(e.db, e.space, o)
}

// offsetClock reads another clock shifted by a fixed offset: a worker whose
// clock is set wrong.
type offsetClock struct {
	clock.Clock
	off time.Duration
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(c.off) }

func (e *env) join(reg *Registry, id string) *Tracker {
	e.t.Helper()
	tr := NewTracker(reg, "gc", id, nLanes)
	if err := tr.Join(context.Background()); err != nil {
		e.t.Fatalf("join %s: %v", id, err)
	}
	return tr
}

func beat(t *testing.T, trs ...*Tracker) {
	t.Helper()
	for _, tr := range trs {
		if err := tr.Beat(context.Background()); err != nil {
			t.Fatalf("beat %s: %v", tr.ID(), err)
		}
	}
}

// tick advances the clock one period and beats every tracker given.
func (e *env) tick(trs ...*Tracker) {
	e.t.Helper()
	e.clock.Advance(period)
	beat(e.t, trs...)
}

func liveIDsOf(tr *Tracker) []string {
	var ids []string
	for _, m := range tr.Live() {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestJoinAloneWatchesEveryLane(t *testing.T) {
	e := newEnv(t)
	tr := NewTracker(e.reg, "gc", "a", nLanes)
	if got := tr.Lanes(); !slices.Equal(got, allLanes(nLanes)) {
		t.Fatalf("before join: %v, want every lane", got)
	}
	if err := tr.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := tr.Lanes(); !slices.Equal(got, allLanes(nLanes)) {
		t.Fatalf("alone: %v, want every lane", got)
	}
	live := tr.Live()
	if len(live) != 1 || live[0].ID != "a" || live[0].TaskType != "gc" || !live[0].Live || live[0].Counter != 1 {
		t.Fatalf("live: %+v", live)
	}
	if in := live[0].Info; in.Host != "test-host" || in.NumLanes != nLanes || in.Replicas != 1 || len(in.Lanes) != nLanes {
		t.Errorf("own info: %+v", in)
	}
}

// Two workers that have seen each other split the lanes exactly as Assign
// says, and publish the split in their info.
func TestWorkersSplitLanes(t *testing.T) {
	for _, r := range []int{1, 2} {
		t.Run(fmt.Sprint("replicas=", r), func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.Replicas = r })
			a, b, c := e.join(e.reg, "a"), e.join(e.reg, "b"), e.join(e.reg, "c")
			e.tick(a, b, c)
			// Seen once, the others are not yet known to beat, and each
			// watches the lanes it would have without them too.
			if got := a.Lanes(); len(got) != nLanes {
				t.Fatalf("a watches %d lanes before it saw b and c beat", len(got))
			}
			e.tick(a, b, c)
			ids := []string{"a", "b", "c"}
			count := make([]int, nLanes)
			for _, tr := range []*Tracker{a, b, c} {
				if got := liveIDsOf(tr); !slices.Equal(got, ids) {
					t.Fatalf("%s sees %v", tr.ID(), got)
				}
				lanes := tr.Lanes()
				if want := Assign(nLanes, ids, tr.ID(), r); !slices.Equal(lanes, want) {
					t.Fatalf("%s lanes %v, want %v", tr.ID(), lanes, want)
				}
				for _, l := range lanes {
					count[l]++
				}
			}
			for l, n := range count {
				if n != r {
					t.Fatalf("lane %d watched %d times, want %d", l, n, r)
				}
			}
			// Each publishes its lanes; the others see them.
			e.tick(a, b, c)
			for _, m := range a.Live() {
				if want := Assign(nLanes, ids, m.ID, r); !slices.Equal(m.Info.Lanes, want) {
					t.Errorf("a sees %s publish %v, want %v", m.ID, m.Info.Lanes, want)
				}
			}
		})
	}
}

// After a worker dies, the survivors take over its lanes once they have
// seen its heartbeat unchanged for Timeout: within Timeout + one period of
// its last beat on their clock, and not before Timeout.
func TestTakeoverAfterDeath(t *testing.T) {
	e := newEnv(t)
	a, b := e.join(e.reg, "a"), e.join(e.reg, "b")
	for range 3 {
		e.tick(a, b)
	}
	split := a.Lanes()
	if len(split) == nLanes || len(split) == 0 {
		t.Fatalf("a watches %d lanes with b alive", len(split))
	}
	// b beats once more and dies; a observes every period.
	e.tick(b, a)
	died := e.clock.Now()
	changed := a.Changed()
	for e.clock.Now().Sub(died) < timeout+period {
		e.tick(a)
		since := e.clock.Now().Sub(died)
		switch {
		case since < timeout:
			if !slices.Equal(a.Lanes(), split) {
				t.Fatalf("%v after b's last beat a already moved lanes (timeout %v)", since, timeout)
			}
			if !slices.Equal(liveIDsOf(a), []string{"a", "b"}) {
				t.Fatalf("%v after: live %v", since, liveIDsOf(a))
			}
		case since >= timeout:
			if got := a.Lanes(); !slices.Equal(got, allLanes(nLanes)) {
				t.Fatalf("%v after b's last beat a watches %d lanes, want all", since, len(got))
			}
			if !slices.Equal(liveIDsOf(a), []string{"a"}) {
				t.Fatalf("live %v", liveIDsOf(a))
			}
		}
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed did not fire on takeover")
	}
	// Still a member, just not live; then b comes back.
	ms := a.Members()
	if len(ms) != 2 || ms[1].ID != "b" || ms[1].Live {
		t.Fatalf("members %+v", ms)
	}
	e.tick(b, a)
	if !slices.Equal(a.Lanes(), split) {
		t.Fatalf("b came back but a did not give its lanes back")
	}
}

// Liveness is judged on change, never on clocks: workers whose clocks are
// hours off stay live as long as they beat.
func TestSkewedClocksDoNotKill(t *testing.T) {
	e := newEnv(t)
	a := e.join(e.reg, "a")
	b := e.join(e.skewed(time.Hour), "b")
	c := e.join(e.skewed(-time.Hour), "c")
	for range 20 {
		e.tick(a, b, c)
		for _, tr := range []*Tracker{a, b, c} {
			if got := liveIDsOf(tr); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("%s sees live %v", tr.ID(), got)
			}
		}
	}
}

func TestClockOffset(t *testing.T) {
	e := newClockedEnv(t)
	a := e.join(e.reg, "a")
	if _, ok := a.ClockOffset(); ok {
		t.Fatal("offset known with no other member")
	}
	b := e.join(e.skewed(3*time.Second), "b")
	c := e.join(e.reg, "c")
	d := e.join(e.skewed(-250*time.Millisecond), "d")
	all := []*Tracker{a, b, c, d}
	want := map[string]time.Duration{
		// Others' clocks relative to real: a sees {+3s, 0, -0.25s}; with
		// itself the median is 0.
		"a": 0, "b": 3 * time.Second, "c": 0, "d": -250 * time.Millisecond,
	}
	check := func(round string, maxBound time.Duration) {
		t.Helper()
		for _, tr := range all {
			est, ok := tr.Skew()
			if !ok || est.Samples != 3 || !est.Majority {
				t.Fatalf("%s, %s: %+v %v", round, tr.ID(), est, ok)
			}
			if est.Bound > maxBound {
				t.Errorf("%s, %s: bound %v above %v", round, tr.ID(), est.Bound, maxBound)
			}
			if diff := (est.Offset - want[tr.ID()]).Abs(); diff > est.Bound {
				t.Errorf("%s, %s: offset %v, want %v ± %v", round, tr.ID(), est.Offset, want[tr.ID()], est.Bound)
			}
			if off, _ := tr.ClockOffset(); off != est.Offset {
				t.Errorf("ClockOffset %v != Skew %v", off, est.Offset)
			}
		}
	}
	// At first sight, through read versions: within milliseconds.
	e.tick(all...)
	check("first sight", 2*truncation+grvAllowance+time.Millisecond)
	// Once each member was seen beating, through the bracket of two rounds:
	// with a round every period, within half a period (+1ms).
	e.tick(all...)
	check("bracketed", period/2+time.Millisecond)
}

// Leaving clears the worker's keys, so the others take its lanes at their
// next beat rather than after Timeout.
func TestLeaveHandsLanesOverAtNextBeat(t *testing.T) {
	e := newEnv(t)
	a, b := e.join(e.reg, "a"), e.join(e.reg, "b")
	e.tick(a, b)
	ctx := context.Background()
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.Lanes(); len(got) != 0 {
		t.Errorf("after leave b watches %v", got)
	}
	beat(t, a) // no time passes
	if got := a.Lanes(); !slices.Equal(got, allLanes(nLanes)) {
		t.Fatalf("a watches %d lanes after b left", len(got))
	}
	if kvs := e.read(e.reg.memberSpace("gc", "b")); len(kvs) != 0 {
		t.Errorf("b left keys behind: %v", kvs)
	}
	if err := b.Leave(ctx); !errors.Is(err, ErrNotJoined) {
		t.Errorf("second leave: %v", err)
	}
	if err := b.Beat(ctx); !errors.Is(err, ErrNotJoined) {
		t.Errorf("beat after leave: %v", err)
	}
	// Re-joining works.
	if err := b.Join(ctx); err != nil {
		t.Fatal(err)
	}
	beat(t, a)
	if !slices.Equal(liveIDsOf(a), []string{"a", "b"}) {
		t.Errorf("after re-join a sees %v", liveIDsOf(a))
	}
}

func (e *env) read(s tuple.Subspace) []kv.KeyValue {
	e.t.Helper()
	var out []kv.KeyValue
	b, end := s.Range()
	err := e.db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		out, err = tr.GetRange(kv.KeyRange{Begin: b, End: end}, kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// Members dead for ExpireAfter are cleared by an observer, a few per beat.
func TestExpireDeadMembers(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ExpireAfter = 3 * timeout })
	a := e.join(e.reg, "a")
	var dead []*Tracker
	for i := range maxExpirePerBeat + 2 {
		dead = append(dead, e.join(e.reg, fmt.Sprintf("dead-%d", i)))
	}
	beat(t, a)
	start := e.clock.Now()
	for e.clock.Now().Sub(start) < 3*timeout-period {
		e.tick(a)
	}
	if n := len(a.Members()); n != len(dead)+1 {
		t.Fatalf("expired too early: %d members", n)
	}
	e.tick(a) // 3*timeout after a first saw them: the first batch goes
	if n := len(a.Members()); n != 3 {
		t.Fatalf("after one expiring beat %d members, want 1 + 2 left", n)
	}
	e.tick(a)
	if n := len(a.Members()); n != 1 {
		t.Fatalf("after two expiring beats %d members", n)
	}
	if kvs := e.read(e.reg.typeSpace("gc")); len(kvs) != 2 {
		t.Fatalf("keys left: %d, want a's two", len(kvs))
	}
	// An expired member that was only slow comes back whole.
	beat(t, dead[0])
	beat(t, a)
	if got := liveIDsOf(a); !slices.Equal(got, []string{"a", "dead-0"}) {
		t.Fatalf("live %v", got)
	}
	if ms := a.Live(); len(ms[1].Info.Lanes) == 0 {
		t.Errorf("returning member did not republish its info: %+v", ms[1])
	}
}

// The cost of a heartbeat, in FDB operations: a steady-state beat is one
// read version, one range read and one mutation (the heartbeat Set), in one
// commit, whatever the number of members. A beat whose lanes change adds
// the info Set.
func TestHeartbeatCost(t *testing.T) {
	e := newEnv(t)
	cdb := kv.WithCounters(e.db)
	reg := NewRegistry(cdb, e.space, e.opts)
	ids := []string{"a", "b", "c", "d"}
	var trs []*Tracker
	for _, id := range ids {
		trs = append(trs, e.join(reg, id))
	}
	e.tick(trs...)
	e.tick(trs...) // settle: everyone has seen everyone and republished

	before := cdb.Stats()
	const rounds = 10
	for range rounds {
		e.tick(trs...)
	}
	per := cdb.Stats().Sub(before)
	beats := int64(rounds * len(trs))
	t.Logf("steady-state heartbeat, %d members: %v", len(trs), per.Per(beats))
	want := kv.Stats{ReadVersions: beats, RangeReads: beats, Mutations: beats, Commits: beats}
	if per.ReadVersions != want.ReadVersions || per.RangeReads != want.RangeReads ||
		per.Mutations != want.Mutations || per.Commits != want.Commits ||
		per.Reads != 0 || per.Conflicts != 0 || per.Watches != 0 {
		t.Errorf("per %d beats: %v, want %v", beats, per, want)
	}
	if kr := per.KeysRead / beats; kr != int64(2*len(trs)) {
		t.Errorf("keys read per beat %d, want %d", kr, 2*len(trs))
	}

	// A membership change costs each worker whose lanes moved one more Set.
	before = cdb.Stats()
	joiner := e.join(reg, "e")
	joinCost := cdb.Stats().Sub(before)
	t.Logf("join: %v", joinCost)
	if joinCost.Mutations != 2 || joinCost.Commits != 1 {
		t.Errorf("join: %v, want 2 mutations in 1 commit", joinCost)
	}
	// The others keep their lanes while the joiner is unconfirmed, and give
	// some up (publishing their new lanes) once they have seen it beat; the
	// joiner, which watched every lane until it saw the others beat, drops
	// to its share one round earlier.
	// With bounded loads a join can also move lanes between the others, so
	// each round costs one beat per worker plus at most one info Set each.
	for i := range 2 {
		before = cdb.Stats()
		e.tick(trs...)
		beat(t, joiner)
		change := cdb.Stats().Sub(before)
		t.Logf("round %d after a join, %d workers: %v", i+1, len(trs)+1, change)
		workers := int64(len(trs)) + 1
		if change.Mutations < workers+1 || change.Mutations > 2*workers {
			t.Errorf("round %d after a join: %d mutations, want %d..%d", i+1, change.Mutations, workers+1, 2*workers)
		}
	}
}

// A worker that joins while a dead member's keys linger sees that member
// for the first time and cannot tell it is dead; the others already know.
// The lanes the others leave to the joiner must still be watched.
func TestJoinerCoversLanesOfLingeringDeadMember(t *testing.T) {
	e := newEnv(t)
	a, b, x := e.join(e.reg, "a"), e.join(e.reg, "b"), e.join(e.reg, "x")
	for range 3 {
		e.tick(a, b, x)
	}
	// a and b saw x's last beat one round after it made it.
	for range timeout/period + 1 {
		e.tick(a, b)
	}
	if got := liveIDsOf(a); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("x not dead yet: %v", got)
	}
	y := e.join(e.reg, "y")
	trs := []*Tracker{a, b, y}
	for round := range 2 * timeout / period {
		covered := make([]bool, nLanes)
		for _, tr := range trs {
			for _, l := range tr.Lanes() {
				covered[l] = true
			}
		}
		if l := slices.Index(covered, false); l >= 0 {
			t.Fatalf("round %d after y joined: lane %d unwatched (a %v, b %v, y %v)", round, l, a.Lanes(), b.Lanes(), y.Lanes())
		}
		e.tick(trs...)
	}
	// Settled: exactly Assign's shares.
	for _, tr := range trs {
		if want := Assign(nLanes, []string{"a", "b", "y"}, tr.ID(), 1); !slices.Equal(tr.Lanes(), want) {
			t.Errorf("%s settled on %v, want %v", tr.ID(), tr.Lanes(), want)
		}
	}
}

// Heartbeats never conflict, even all at once.
func TestConcurrentBeatsNeverConflict(t *testing.T) {
	e := newEnv(t)
	cdb := kv.WithCounters(e.db)
	reg := NewRegistry(cdb, e.space, e.opts)
	var trs []*Tracker
	for i := range 8 {
		trs = append(trs, e.join(reg, fmt.Sprint("w", i)))
	}
	for range 10 {
		e.clock.Advance(period)
		var wg sync.WaitGroup
		for _, tr := range trs {
			wg.Go(func() {
				for range 5 {
					if err := tr.Beat(context.Background()); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	if s := cdb.Stats(); s.Conflicts != 0 {
		t.Fatalf("%d conflicts in %d commits", s.Conflicts, s.Commits)
	}
}

// Garbage in the registry - stray keys, malformed values - is skipped or
// tolerated and logged; it never stops a heartbeat.
func TestGarbageInRegistry(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ts := e.reg.typeSpace("gc")
	err := e.db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(append(ts.Bytes(), 0x00, 0x01), []byte("not a tuple"))
		tr.Set(ts.Pack(tuple.Tuple{int64(7), "hb"}), []byte("wrong types"))
		tr.Set(ts.Pack(tuple.Tuple{"x", "other"}), []byte("unknown kind"))
		tr.Set(ts.Pack(tuple.Tuple{"x", "hb", "extra"}), []byte("too long"))
		tr.Set(e.reg.hbKey("gc", "junk"), []byte{1, 2, 3})
		tr.Set(e.reg.infoKey("gc", "junk"), []byte{1, 0xff})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := e.join(e.reg, "a")
	e.tick(a)
	if got := liveIDsOf(a); !slices.Equal(got, []string{"a", "junk"}) {
		t.Fatalf("live %v", got)
	}
	out := logs.String()
	for _, want := range []string{"member info unreadable", "skipped malformed registry keys"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	// A garbage heartbeat that never changes is judged dead like any other.
	for range 5 {
		e.tick(a)
	}
	if got := liveIDsOf(a); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("live %v", got)
	}
}

// A worker restarted under the same ID continues the stored counter, so its
// first beat is a visible change.
func TestRejoinContinuesCounter(t *testing.T) {
	e := newEnv(t)
	a := e.join(e.reg, "a")
	for range 3 {
		e.tick(a)
	}
	again := e.join(e.reg, "a")
	if ms := again.Live(); ms[0].Counter != 5 {
		t.Fatalf("counter after restart %d, want 5", ms[0].Counter)
	}
}

func TestInvalidAndNotJoined(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tr := range []*Tracker{
		NewTracker(e.reg, "", "a", 4), NewTracker(e.reg, "gc", "", 4), NewTracker(e.reg, "gc", "a", 0),
	} {
		if err := tr.Join(ctx); !errors.Is(err, ErrInvalid) {
			t.Errorf("join %q/%q/%d: %v", tr.TaskType(), tr.ID(), tr.n, err)
		}
	}
	if err := NewTracker(e.reg, "gc", "a", 4).Beat(ctx); !errors.Is(err, ErrNotJoined) {
		t.Errorf("beat before join: %v", err)
	}
}

// Task types are separate memberships.
func TestTaskTypesAreSeparate(t *testing.T) {
	e := newEnv(t)
	a := e.join(e.reg, "a")
	b := NewTracker(e.reg, "replication", "b", nLanes)
	if err := b.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.tick(a, b)
	if !slices.Equal(liveIDsOf(a), []string{"a"}) || !slices.Equal(liveIDsOf(b), []string{"b"}) {
		t.Fatalf("a sees %v, b sees %v", liveIDsOf(a), liveIDsOf(b))
	}
}

// A one-shot reader sees every member as stored, and the task types.
func TestSnapshotAndTaskTypes(t *testing.T) {
	e := newEnv(t)
	a := e.join(e.reg, "a")
	e.join(e.reg, "b")
	c := NewTracker(e.reg, "replication", "c", nLanes)
	if err := c.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.tick(a)
	ms, err := e.reg.Snapshot(context.Background(), a.TaskType())
	if err != nil || len(ms) != 2 || ms[0].ID != "a" || ms[1].ID != "b" {
		t.Fatalf("snapshot %+v, %v", ms, err)
	}
	if ms[0].Counter < 2 || ms[0].Clock.IsZero() || ms[0].Info.NumLanes != nLanes || ms[0].InfoErr != nil {
		t.Fatalf("member a as stored: %+v", ms[0])
	}
	types, err := e.reg.TaskTypes(context.Background())
	if err != nil || !slices.Equal(types, []string{a.TaskType(), "replication"}) && !slices.Equal(types, []string{"replication", a.TaskType()}) {
		t.Fatalf("task types %v, %v", types, err)
	}
}

// Workers configured with different lane counts are reported.
func TestParameterMismatchLogged(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	a := e.join(e.reg, "a")
	b := NewTracker(e.reg, "gc", "b", nLanes*2)
	if err := b.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.tick(a)
	if !strings.Contains(logs.String(), "different parameters") {
		t.Errorf("no warning:\n%s", logs.String())
	}
}

// Run joins, beats on the clock's ticks and leaves when cancelled; driven
// by a clock.Fake it needs no sleeping beyond waiting for goroutines.
func TestRun(t *testing.T) {
	e := newEnv(t)
	a := NewTracker(e.reg, "gc", "a", nLanes)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, "ticker", func() bool { return e.clock.Tickers() == 1 && !a.LastBeat().IsZero() })
	for i := range 3 {
		e.clock.Advance(period)
		want := e.clock.Now()
		waitFor(t, fmt.Sprint("beat ", i), func() bool { return a.LastBeat().Equal(want) })
	}
	if ms := a.Live(); len(ms) != 1 || ms[0].Counter != 4 {
		t.Fatalf("after join and 3 ticks: %+v", ms)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if kvs := e.read(e.reg.typeSpace("gc")); len(kvs) != 0 {
		t.Errorf("Run did not leave: %d keys", len(kvs))
	}
	if e.clock.Tickers() != 0 {
		t.Error("ticker not stopped")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func BenchmarkBeat(b *testing.B) {
	db, space := fdbtest.Open(b)
	clk := clock.NewFake(time.Unix(0, 0))
	reg := NewRegistry(db, space, Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	var trs []*Tracker
	for i := range 16 {
		tr := NewTracker(reg, "gc", fmt.Sprint("w", i), 256)
		if err := tr.Join(context.Background()); err != nil {
			b.Fatal(err)
		}
		trs = append(trs, tr)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		clk.Advance(time.Millisecond)
		if err := trs[i%len(trs)].Beat(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// joinLimited joins a tracker that stands by beyond maxOffset.
func (e *env) joinLimited(reg *Registry, id string, maxOffset time.Duration) *Tracker {
	e.t.Helper()
	tr := NewTracker(reg, "gc", id, nLanes)
	tr.SetMaxOffset(maxOffset)
	if err := tr.Join(context.Background()); err != nil {
		e.t.Fatalf("join %s: %v", id, err)
	}
	return tr
}

// Two workers 10 s apart never stop each other: with no majority, the one
// that joined first is the reference, and only the other stands by, its
// lanes watched by the first. Whichever joins first.
func TestTwoSkewedWorkersOnlyTheJuniorStandsBy(t *testing.T) {
	for _, aheadFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("ahead_first=", aheadFirst), func(t *testing.T) {
			e := newClockedEnv(t)
			const limit = 3750 * time.Millisecond
			var senior, junior *Tracker
			if aheadFirst {
				senior = e.joinLimited(e.skewed(10*time.Second), "s", limit)
				junior = e.joinLimited(e.reg, "j", limit)
			} else {
				senior = e.joinLimited(e.reg, "s", limit)
				junior = e.joinLimited(e.skewed(10*time.Second), "j", limit)
			}
			for i := range 10 {
				e.tick(senior, junior)
				if senior.Standby() {
					t.Fatalf("round %d: the senior worker stands by (skew %+v)", i, first(senior.Skew()))
				}
				if !junior.Standby() {
					t.Fatalf("round %d: the junior worker 10s off claims (skew %+v)", i, first(junior.Skew()))
				}
				if got := senior.Lanes(); len(got) != nLanes {
					t.Fatalf("round %d: the senior watches %d lanes, want all", i, len(got))
				}
				if got := junior.Lanes(); len(got) != 0 {
					t.Fatalf("round %d: the junior on standby watches %v", i, got)
				}
			}
			if est, _ := junior.Skew(); est.Majority || est.Reference != "s" || (est.Offset.Abs()-10*time.Second).Abs() > est.Bound {
				t.Fatalf("junior's estimate %+v: want 10s off the senior", est)
			}
		})
	}
}

// One worker of four 10 s ahead is outvoted even though it joined first:
// it stands by, and the other three share every lane.
func TestOneOfFourAheadStandsByEvenIfSenior(t *testing.T) {
	e := newClockedEnv(t)
	const limit = 1250 * time.Millisecond // a 10 s lease
	off := e.joinLimited(e.skewed(10*time.Second), "off", limit)
	all := []*Tracker{off}
	for _, id := range []string{"c1", "c2", "c3"} {
		all = append(all, e.joinLimited(e.reg, id, limit))
		e.tick(all...)
	}
	for range 3 {
		e.tick(all...)
	}
	if !off.Standby() || len(off.Lanes()) != 0 {
		t.Fatalf("the worker 10s ahead: standby %v, lanes %v (skew %+v)", off.Standby(), off.Lanes(), first(off.Skew()))
	}
	covered := map[int]bool{}
	for _, tr := range all[1:] {
		if tr.Standby() {
			t.Fatalf("%s stands by (skew %+v)", tr.ID(), first(tr.Skew()))
		}
		for _, l := range tr.Lanes() {
			covered[l] = true
		}
		for _, m := range tr.Live() {
			if m.ID == "off" && !m.Standby {
				t.Fatalf("%s does not see off on standby", tr.ID())
			}
		}
	}
	if len(covered) != nLanes {
		t.Fatalf("the three agreeing workers watch %d lanes, want %d", len(covered), nLanes)
	}
	if est, _ := off.Skew(); !est.Majority || (est.Offset-10*time.Second).Abs() > est.Bound {
		t.Fatalf("off's estimate %+v: want 10s ahead of a majority", est)
	}
}

func first[A, B any](a A, _ B) A { return a }

// A heartbeat reads a bounded number of registry keys whatever the number
// of members: 2 × MaxMembers. Before the bound it read every member.
func TestBeatReadsBoundedMembership(t *testing.T) {
	e := newEnv(t)
	const extra = MaxMembers + 500
	ctx := context.Background()
	for start := 0; start < extra; start += 500 {
		if err := e.db.Transact(ctx, func(tr kv.Transaction) error {
			for i := start; i < start+500; i++ {
				id := fmt.Sprintf("m%05d", i)
				tr.Set(e.reg.hbKey("gc", id), encodeBeat(hbValue{counter: 1, wall: e.clock.Now()}))
				tr.Set(e.reg.infoKey("gc", id), encodeInfo(Info{NumLanes: nLanes, Replicas: 1}))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	counted := kv.WithCounters(e.db)
	tr := NewTracker(NewRegistry(counted, e.space, e.opts), "gc", "z-self", nLanes)
	if err := tr.Join(ctx); err != nil {
		t.Fatal(err)
	}
	before := counted.Stats()
	beat(t, tr)
	if got := counted.Stats().Sub(before).KeysRead; got > maxMemberKeys {
		t.Fatalf("a beat read %d keys among %d members, want at most %d", got, extra+1, maxMemberKeys)
	}
	if n := len(tr.Members()); n > MaxMembers+1 {
		t.Fatalf("view of %d members, want at most %d", n, MaxMembers+1)
	}
	if got := tr.Lanes(); len(got) == 0 {
		t.Fatal("a member past the bound watches no lane")
	}
}
