package quick

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

var zcEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type zcEnv struct {
	q   *Queue
	db  *kv.CountedDB
	clk *clock.Fake
	ctx context.Context
}

func newZCEnv(t testing.TB, opts Options) *zcEnv {
	t.Helper()
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	db := kv.WithCounters(raw)
	clk := clock.NewFake(zcEpoch)
	opts.Clock = clk
	ctx := context.Background()
	q, err := Open(ctx, db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &zcEnv{q: q, db: db, clk: clk, ctx: ctx}
}

func (e *zcEnv) enqueue(t testing.TB, jobs ...NewJob) []Enqueued {
	t.Helper()
	res, err := e.q.Enqueue(e.ctx, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *zcEnv) claim(t testing.TB, o ClaimOptions) Claimed {
	t.Helper()
	if o.TaskType == "" {
		o.TaskType = "email"
	}
	if o.Holder == "" {
		o.Holder = "w"
	}
	if o.Lease == 0 {
		o.Lease = time.Minute
	}
	res, err := e.q.Consumer().Claim(e.ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *zcEnv) write(t testing.TB, fn func(tr kv.Transaction)) {
	t.Helper()
	if err := e.db.Transact(e.ctx, func(tr kv.Transaction) error { fn(tr); return nil }); err != nil {
		t.Fatal(err)
	}
}

func (e *zcEnv) get(t testing.TB, key []byte) []byte {
	t.Helper()
	var v []byte
	err := e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(key).Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *zcEnv) count(t testing.TB, r kv.KeyRange) int {
	t.Helper()
	n := 0
	err := e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(r, kv.RangeOptions{}).GetSliceWithError()
		n = len(kvs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *zcEnv) pointers(t testing.TB, taskType string) int {
	return e.count(t, rangeOf(e.q.zk.ptr.Sub(taskType)))
}

// Claims clear pointers that name no lane state or another pointer time,
// and keep working the healthy lanes.
func TestZoneStalePointersAreCleared(t *testing.T) {
	e := newZCEnv(t, Options{})
	res := e.enqueue(t, NewJob{TaskType: "email", ItemSpace: "ok"})
	// A stale pointer: a lane that has no state (and no jobs), and one
	// whose lane state names another pointer time.
	ghost := laneRef{z: e.q.zoneOf("email", "ghost"), prio: Normal, lane: 0}
	other := laneRef{z: e.q.zoneOf("email", "moved"), prio: Normal, lane: 0}
	e.write(t, func(tr kv.Transaction) {
		tr.Set(e.q.pointerKeyOf(ghost, zcEpoch.UnixMilli()-5), pointerValueOf(ghost))
		tr.Set(e.q.pointerKeyOf(other, zcEpoch.UnixMilli()-4), pointerValueOf(other))
		s := laneState{PtrMs: zcEpoch.UnixMilli() + 3_600_000}
		tr.Set(other.stateKey(), s.marshal())
		tr.Set(e.q.pointerKeyOf(other, s.PtrMs), pointerValueOf(other))
	})
	var got []ID
	for range 5 {
		c := e.claim(t, ClaimOptions{Peek: 1})
		for _, l := range c.Jobs {
			got = append(got, l.ID)
		}
	}
	if len(got) != 1 || got[0] != res[0].ID {
		t.Fatalf("claimed %v, want the healthy job", got)
	}
	// Left: the moved lane's real pointer (in an hour) and the healthy
	// lane's pointer at its lease deadline.
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers left, want 2", n)
	}
	if v := e.get(t, ghost.stateKey()); v != nil {
		t.Fatal("a lane state was left for an empty lane")
	}
}

// A pointer, a lane state or a job value that does not decode does not
// block healthy work; the bad entries are quarantined or rebuilt.
func TestZoneCorruptEntriesDoNotBlockHealthyWork(t *testing.T) {
	e := newZCEnv(t, Options{})
	res := e.enqueue(t,
		NewJob{TaskType: "email", ItemSpace: "a"},
		NewJob{TaskType: "email", ItemSpace: "a"},
		NewJob{TaskType: "email", ItemSpace: "b"})
	a := laneRef{z: e.q.zoneOf("email", "a"), prio: Normal, lane: 0}
	b := laneRef{z: e.q.zoneOf("email", "b"), prio: Normal, lane: 0}
	e.write(t, func(tr kv.Transaction) {
		// A pointer whose key does not parse, vesting first.
		tr.Set(append(e.q.zk.ptr.Sub("email", int64(Normal)).Bytes(), 0x01, 0xff), []byte("junk"))
		// A job value that does not decode, before a's jobs, and a key in
		// a's lane that does not parse.
		tr.Set(a.jobKey(zcEpoch.UnixMilli()-10, NewID(zcEpoch)), []byte{0xff, 0xff, 0xff})
		tr.Set(append(a.laneRange().Begin, 0x05), []byte("x"))
		// b's lane state does not decode.
		tr.Set(b.stateKey(), []byte{0xff, 0xff})
	})
	got := map[ID]bool{}
	for range 6 {
		c := e.claim(t, ClaimOptions{Max: 10})
		for _, l := range c.Jobs {
			got[l.ID] = true
		}
	}
	for _, r := range res {
		if !got[r.ID] {
			t.Fatalf("healthy job %s not claimed (claimed %v)", r.ID, got)
		}
	}
	n, err := e.q.QuarantineCount(e.ctx)
	if err != nil || n != 3 {
		t.Fatalf("quarantined %d entries (%v), want 3: the pointer, the job value, the job key", n, err)
	}
}

// PurgeMarkers clears zones markers older than the idempotency window.
func TestZonePurgeMarkers(t *testing.T) {
	e := newZCEnv(t, Options{IdempotencyWindow: time.Hour})
	old := e.enqueue(t, NewJob{TaskType: "email"})
	e.clk.Advance(40 * time.Minute)
	young := e.enqueue(t, NewJob{TaskType: "email"})
	e.clk.Advance(30 * time.Minute)
	if err := e.q.PurgeMarkers(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.get(t, e.q.zk.markKey(old[0].ID)) != nil || e.get(t, e.q.zk.markKey(young[0].ID)) == nil {
		t.Fatal("PurgeMarkers did not clear exactly the markers older than the window")
	}
}

// A zone's lanes grow while a claim finds its lane backlogged, and
// SetZoneLanes resizes it while jobs are leased and pending: no job is
// lost or moved, and new jobs spread over the new lanes.
func TestZoneLaneGrowthAndResizeInFlight(t *testing.T) {
	e := newZCEnv(t, Options{MaxZoneLanes: 4})
	z := e.q.zoneOf("email", "hot")
	lanesOf := func() int {
		return e.q.zoneLanesOf(e.get(t, z.metaKey()))
	}
	batch := func(n int) []NewJob {
		jobs := make([]NewJob, n)
		for i := range jobs {
			jobs[i] = NewJob{TaskType: "email", ItemSpace: "hot"}
		}
		return jobs
	}
	want := map[ID]bool{}
	// Fixed IDs keep which lanes they hash to, and so the test, the same
	// in every run.
	first := batch(100)
	for i := range first {
		first[i].ID = DeterministicID(zcEpoch, [10]byte{42, byte(i)})
	}
	for _, r := range e.enqueue(t, first...) {
		want[r.ID] = true
	}
	// A short burst that the claim drains at once grows nothing; a
	// backlog that has waited a second does.
	c := e.claim(t, ClaimOptions{Max: 10})
	if !c.More || lanesOf() != 1 {
		t.Fatalf("a fresh backlog grew the zone to %d lanes", lanesOf())
	}
	leased := c.Jobs
	e.clk.Advance(2 * time.Second)
	c = e.claim(t, ClaimOptions{Max: 10})
	if len(c.Jobs) != 10 || lanesOf() != 2 {
		t.Fatalf("a backlog waiting 2 s: %d jobs, the zone at %d lanes, want 10 and 2", len(c.Jobs), lanesOf())
	}
	leased = append(leased, c.Jobs...)
	// The old backlog sat in lane 0: the claim that grew the zone split the
	// rest of it (80 jobs, under one split's bound) into the empty lane 1
	// (split.go); lane 0 keeps the leased jobs, its pointer at their
	// deadline. A moved job is not moved again: claims of lane 1 neither
	// split it nor grow the zone.
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers after the growing claim, want 2 (lane 0 and the chunk in lane 1)", n)
	}
	c = e.claim(t, ClaimOptions{Max: 10})
	leased = append(leased, c.Jobs...)
	if len(c.Jobs) != 10 || c.Jobs[0].Lane() != 1 || lanesOf() != 2 {
		t.Fatalf("a claim of the chunk took %d jobs (first in lane %d), the zone at %d lanes; want 10 from lane 1, 2 lanes",
			len(c.Jobs), c.Jobs[0].Lane(), lanesOf())
	}
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers after a claim of the chunk, want 2", n)
	}
	// New jobs spread over two lanes.
	for _, r := range e.enqueue(t, batch(40)...) {
		want[r.ID] = true
	}
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers after enqueueing into a zone of 2 lanes, want 2", n)
	}
	// Shrink to one lane with jobs leased and pending, then grow to 8.
	if err := e.q.SetZoneLanes(e.ctx, "email", "hot", 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.enqueue(t, batch(10)...) {
		want[r.ID] = true
	}
	if err := e.q.SetZoneLanes(e.ctx, "email", "hot", 8); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.enqueue(t, batch(50)...) {
		want[r.ID] = true
	}
	if err := e.q.SetZoneLanes(e.ctx, "email", "hot", 0); err == nil {
		t.Fatal("SetZoneLanes accepted 0 lanes")
	}
	// Drain: every job comes out once; the leased ones after their lease.
	seen := map[ID]int{}
	for _, l := range leased {
		seen[l.ID]++
	}
	e.clk.Advance(time.Minute)
	for range 200 {
		c := e.claim(t, ClaimOptions{Max: 10, Lease: 10 * time.Minute})
		for _, l := range c.Jobs {
			seen[l.ID]++
		}
		// NextVest now: nothing here, but look again (a lane whose jobs a
		// split moved, say).
		if len(c.Jobs) == 0 && !c.More && (c.NextVest.IsZero() || c.NextVest.After(e.clk.Now())) {
			break
		}
	}
	for id := range want {
		if seen[id] < 1 {
			t.Fatalf("job %s lost", id)
		}
	}
	for _, l := range leased {
		if seen[l.ID] != 2 {
			t.Fatalf("leased job %s ran %d times, want 2 (once before and once after its lease lapsed)", l.ID, seen[l.ID])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("claimed %d distinct jobs, enqueued %d", len(seen), len(want))
	}
}

// Keep holds the lane while it has vested jobs: the next claim continues
// on it through Pointer; a lost lane lease says so.
func TestZoneKeepContinuesOnTheLane(t *testing.T) {
	// One lane at most: a's jobs wait a second, and a claim would split
	// them into another lane otherwise (split.go).
	e := newZCEnv(t, Options{MaxZoneLanes: 1})
	jobs := make([]NewJob, 25)
	for i := range jobs {
		jobs[i] = NewJob{TaskType: "email", ItemSpace: "a"}
	}
	e.enqueue(t, jobs...)
	e.clk.Advance(pointerBucketMs * time.Millisecond) // a's pointer comes first: a second earlier
	e.enqueue(t, NewJob{TaskType: "email", ItemSpace: "b"})
	c := e.claim(t, ClaimOptions{Max: 10, Keep: true, Peek: 1})
	if c.Lane == nil || !c.More || c.Lane.ItemSpace != "a" || len(c.Jobs) != 10 {
		t.Fatalf("claim with Keep = %d jobs, more %v, pointer %+v", len(c.Jobs), c.More, c.Lane)
	}
	p := c.Lane
	total := len(c.Jobs)
	for p != nil {
		c = e.claim(t, ClaimOptions{Max: 10, Keep: true, Lane: p})
		total += len(c.Jobs)
		for _, l := range c.Jobs {
			if l.ItemSpace != "a" {
				t.Fatalf("a claim through the pointer took a job of %q", l.ItemSpace)
			}
		}
		p = c.Lane
	}
	if total != 25 {
		t.Fatalf("took %d jobs through the kept lane, want 25", total)
	}
	// A lapsed lane lease taken over by another is lost to its holder.
	c = e.claim(t, ClaimOptions{Max: 1, Keep: true})
	if c.Lane != nil {
		t.Fatalf("a lane with no more vested jobs was kept: %+v", c)
	}
	more := make([]NewJob, 5)
	for i := range more {
		more[i] = NewJob{TaskType: "email", ItemSpace: "c"}
	}
	e.enqueue(t, more...)
	c = e.claim(t, ClaimOptions{Max: 1, Keep: true})
	if c.Lane == nil {
		t.Fatal("no pointer kept")
	}
	e.clk.Advance(e.q.opts.LaneLeaseTime)
	e.claim(t, ClaimOptions{Max: 1, Holder: "other"})
	if _, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute, Lane: c.Lane}); !IsLaneLost(err) {
		t.Fatalf("claim through a lane lease taken over = %v, want ErrLaneLost", err)
	}
}

func TestZoneClaimRecognisesItsOwnCommit(t *testing.T) {
	for name, f := range map[string]kv.Faults{
		"1021":           {UnknownCommitted: 1},
		"1031-in-commit": {TimedOutCommitted: 1},
		"1025-in-commit": {CancelledCommitted: 1},
	} {
		t.Run(name, func(t *testing.T) {
			truth := newZCEnv(t, Options{})
			faulty := kv.WithFaults(truth.db, f)
			q, err := Open(truth.ctx, faulty, truth.q.space, truth.q.opts)
			if err != nil {
				t.Fatal(err)
			}
			res := truth.enqueue(t, NewJob{TaskType: "email", MaxAttempts: 1}, NewJob{TaskType: "email"})
			c, err := q.Consumer().Claim(truth.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 10, Lease: time.Minute, Timeout: time.Second})
			if err != nil || len(c.Jobs) != 2 {
				t.Fatalf("claim = %+v, %v", c, err)
			}
			faulty.SetEnabled(false)
			// The leases returned are the ones stored: their tokens hold.
			err = truth.db.Transact(truth.ctx, func(tr kv.Transaction) error {
				mine, err := truth.q.zstillHeld(tr, c.Jobs)
				if err == nil && len(mine) != 2 {
					err = fmt.Errorf("%d of 2 leases hold their tokens", len(mine))
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			// One attempt spent each: the one-attempt job is dead-lettered
			// once its lease lapses, not before.
			truth.clk.Advance(time.Minute)
			again := truth.claim(t, ClaimOptions{Max: 10})
			if again.DeadLettered != 1 || len(again.Jobs) != 1 || again.Jobs[0].ID != res[1].ID || again.Jobs[0].Attempt != 2 {
				t.Fatalf("after the lapse = %+v", again)
			}
		})
	}
}

// A claim that dead-lettered an exhausted job in a commit reported unknown
// counts it once, and the job is dead once.
func TestZoneClaimRecognisesItsOwnDeadLetters(t *testing.T) {
	truth := newZCEnv(t, Options{})
	faulty := kv.WithFaults(truth.db, kv.Faults{UnknownCommitted: 1})
	q, err := Open(truth.ctx, faulty, truth.q.space, truth.q.opts)
	if err != nil {
		t.Fatal(err)
	}
	truth.enqueue(t, NewJob{TaskType: "email", MaxAttempts: 1})
	truth.claim(t, ClaimOptions{})
	truth.clk.Advance(time.Minute)
	c, err := q.Consumer().Claim(truth.ctx, ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
	if err != nil || c.DeadLettered != 1 || len(c.Jobs) != 0 {
		t.Fatalf("claim = %+v, %v; want one dead letter", c, err)
	}
	if n, err := truth.q.DeadCount(truth.ctx, "email"); err != nil || n != 1 {
		t.Fatalf("dead count %d, %v", n, err)
	}
	if faulty.Stats().UnknownCommitted == 0 {
		t.Fatal("no fault injected")
	}
}

// A backlog enqueued while no worker claims grows its zone at enqueue: a
// lane whose pointer has waited unclaimed for 2 s doubles the zone's
// lanes, so the jobs enqueued after it spread over lanes that many workers
// can claim at once; a lane that a claim took since, or one leased, grows
// nothing, and the doubling stops at MaxZoneLanes. No job is lost.
func TestZoneEnqueueGrowsAZoneNoClaimTakes(t *testing.T) {
	e := newZCEnv(t, Options{MaxZoneLanes: 4})
	z := e.q.zoneOf("email", "t1")
	lanesOf := func() int { return e.q.zoneLanesOf(e.get(t, z.metaKey())) }
	job := func() NewJob { return NewJob{TaskType: "email", ItemSpace: "t1"} }
	want := map[ID]bool{}
	add := func(jobs ...NewJob) {
		for _, r := range e.enqueue(t, jobs...) {
			want[r.ID] = true
		}
	}
	add(job())
	e.clk.Advance(1500 * time.Millisecond)
	add(job())
	if n := lanesOf(); n != 1 {
		t.Fatalf("a lane waiting 1.5 s grew the zone to %d lanes", n)
	}
	e.clk.Advance(500 * time.Millisecond)
	add(job(), job())
	if n := lanesOf(); n != 2 {
		t.Fatalf("a lane waiting 2 s unclaimed left the zone at %d lanes, want 2", n)
	}
	// A claim takes the lane: its pointer is filed anew, and an enqueue
	// right after grows nothing.
	c := e.claim(t, ClaimOptions{Max: 1, Lease: 10 * time.Minute})
	if len(c.Jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(c.Jobs))
	}
	leased := c.Jobs[0].ID
	// (The claim may grow the zone itself: its job waited 2 s.)
	before := lanesOf()
	add(job())
	if n := lanesOf(); n != before {
		t.Fatalf("an enqueue into lanes just claimed grew the zone from %d to %d lanes", before, n)
	}
	// Unclaimed again for 2 s: it doubles, then stops at MaxZoneLanes.
	for range 3 {
		e.clk.Advance(2 * time.Second)
		batch := make([]NewJob, 16)
		for i := range batch {
			batch[i] = job()
		}
		add(batch...)
	}
	if n := lanesOf(); n != 4 {
		t.Fatalf("the zone has %d lanes, want MaxZoneLanes 4", n)
	}
	// Every job comes out once (the leased one after its lease).
	e.clk.Advance(2 * time.Hour)
	seen := map[ID]int{leased: 1}
	for range 100 {
		c := e.claim(t, ClaimOptions{Max: 10, Lease: 10 * time.Minute})
		for _, l := range c.Jobs {
			seen[l.ID]++
		}
		if len(c.Jobs) == 0 && !c.More {
			break
		}
	}
	for id := range want {
		if want := map[bool]int{true: 2, false: 1}[id == leased]; seen[id] != want {
			t.Fatalf("job %s ran %d times, want %d", id, seen[id], want)
		}
	}
}
