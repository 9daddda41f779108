package quick

import (
	"testing"
	"time"
)

// A claim of a deep, backlogged lane splits the next chunk of its backlog
// into an empty lane of the zone, so another claimer can take it at once:
// the chunk keeps its vesting times and order, a trackable job stays
// findable by ID, and every job still comes out exactly once. A fresh
// backlog (waited under a second), a short-job type, and leased keys are
// not split.
func TestZoneSplitDeepLane(t *testing.T) {
	e := newZCEnv(t, Options{MaxZoneLanes: 4, TaskTypes: map[string]TaskTypeOptions{
		"email": {}, "thumb": {ShortJobs: true},
	}})
	batch := func(taskType string, n int) []NewJob {
		jobs := make([]NewJob, n)
		for i := range jobs {
			jobs[i] = NewJob{TaskType: taskType, ItemSpace: "big"}
		}
		return jobs
	}
	var ids []ID
	for _, r := range e.enqueue(t, batch("email", 100)...) {
		ids = append(ids, r.ID)
	}
	e.enqueue(t, batch("thumb", 100)...)
	z := e.q.zoneOf("email", "big")
	lane := func(n int) laneRef { return laneRef{z: z, prio: Normal, lane: n} }

	// Fresh: taken, not split.
	c := e.claim(t, ClaimOptions{Max: 5})
	if len(c.Jobs) != 5 || !c.More {
		t.Fatalf("claim = %d jobs, more %v", len(c.Jobs), c.More)
	}
	if n := e.pointers(t, "email"); n != 1 {
		t.Fatalf("a fresh backlog was split: %d pointers", n)
	}
	e.clk.Advance(2 * time.Second)
	c = e.claim(t, ClaimOptions{TaskType: "thumb", Max: 5})
	if n := e.pointers(t, "thumb"); n != 1 {
		t.Fatalf("a short-job lane was split: %d pointers", n)
	}
	if c.Lane != nil {
		if err := e.q.Consumer().ReleaseLane(e.ctx, *c.Lane); err != nil {
			t.Fatal(err)
		}
	}

	// Backlogged: the claim takes 5 and moves the next zsplitChunk(5) = 20
	// into the empty lane 1, in order, with their vesting times.
	before, _ := e.laneKeys(t, lane(0))
	c = e.claim(t, ClaimOptions{Max: 5})
	if len(c.Jobs) != 5 || !c.More {
		t.Fatalf("claim = %d jobs, more %v", len(c.Jobs), c.More)
	}
	moved, mvs := e.laneKeys(t, lane(1))
	for _, v := range mvs {
		if v.Flags&flagSplit == 0 {
			t.Fatal("a moved job does not carry flagSplit")
		}
	}
	if len(moved) != zsplitChunk(5) {
		t.Fatalf("lane 1 holds %d jobs after the split, want %d", len(moved), zsplitChunk(5))
	}
	var pending []zjobKey
	for _, k := range before {
		if k.VestMs <= e.clk.Now().UnixMilli() {
			pending = append(pending, k)
		}
	}
	for i, k := range moved {
		want := pending[5+i] // after the 5 the claim took
		if k.ID != want.ID || k.VestMs != want.VestMs {
			t.Fatalf("moved job %d is %s at %d, want %s at %d", i, k.ID, k.VestMs, want.ID, want.VestMs)
		}
	}
	if st, ok := e.laneState(t, lane(1)); !ok || st.leased() || st.PtrMs > e.clk.Now().UnixMilli() {
		t.Fatalf("the chunk lane's state = %+v (exists %v), want an unleased vested pointer", st, ok)
	}
	info, err := e.q.Get(e.ctx, moved[0].ID)
	if err != nil || info.ID != moved[0].ID {
		t.Fatalf("Get of a moved trackable job = %+v, %v", info, err)
	}
	// The leases the claims took were not moved: they end where they are.
	if n, _ := e.laneKeys(t, lane(0)); len(n)+len(moved) != 100 {
		t.Fatalf("lane 0 holds %d and lane 1 %d keys, want 100 in all", len(n), len(moved))
	}

	// Drain: every job once more than the 10 leased (once each so far).
	seen := map[ID]int{}
	for _, l := range c.Jobs {
		seen[l.ID]++
	}
	e.clk.Advance(2 * time.Minute) // the first leases lapse
	for range 500 {
		c := e.claim(t, ClaimOptions{Max: 5, Lease: 10 * time.Minute})
		for _, l := range c.Jobs {
			seen[l.ID]++
		}
		if len(c.Jobs) == 0 && !c.More && (c.NextVest.IsZero() || c.NextVest.After(e.clk.Now())) {
			break
		}
	}
	for _, id := range ids {
		if seen[id] < 1 {
			t.Fatalf("job %s lost", id)
		}
	}
	if len(seen) != 100 {
		t.Fatalf("claimed %d distinct jobs, enqueued 100", len(seen))
	}
}

// laneKeys reads a lane's job keys, in order.
func (e *zcEnv) laneKeys(t testing.TB, l laneRef) ([]zjobKey, []zjobValue) {
	t.Helper()
	return readLaneKeys(t, e.ctx, e.db, l)
}

// laneState reads a lane's state (ok false: none).
func (e *zcEnv) laneState(t testing.TB, l laneRef) (laneState, bool) {
	t.Helper()
	v := e.get(t, l.stateKey())
	if v == nil {
		return laneState{}, false
	}
	var s laneState
	if err := s.unmarshal(v); err != nil {
		t.Fatal(err)
	}
	return s, true
}

// A split and an enqueue into its chunk lane, interleaved by hand: the
// enqueue creates the lane's state and pointer between the split's read of
// the lane states (none there) and its commit. The split conflicts (it
// read the chunk lane's state) rather than leave the lane two pointers,
// and its retry, finding no idle lane, takes its jobs without splitting.
// Every job comes out once.
func TestZoneSplitRacingAnEnqueueIntoItsChunkLane(t *testing.T) {
	e := newZCEnv(t, Options{ZoneLanes: 2, MaxZoneLanes: 2})
	idIn := func(lane int, seed byte) ID {
		for i := 0; ; i++ {
			id := DeterministicID(zcEpoch, [10]byte{seed, byte(i), byte(i >> 8)})
			if laneOfID(id, 2) == lane {
				return id
			}
		}
	}
	var backlog []NewJob
	for i := range 30 {
		backlog = append(backlog, NewJob{ID: idIn(0, byte(i)), TaskType: "email", ItemSpace: "t"})
	}
	e.enqueue(t, backlog...)
	e.clk.Advance(2 * time.Second)

	tr, err := e.db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := e.q.claimDefaults(ClaimOptions{TaskType: "email", Holder: "w", Max: 5, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.q.claimZoneTx(tr, opts, e.q.Now())
	if err != nil || len(res.Jobs) != 5 {
		t.Fatalf("claim = %d jobs, %v", len(res.Jobs), err)
	}
	lane1 := laneRef{z: e.q.zoneOf("email", "t"), prio: Normal, lane: 1}
	late := idIn(1, 200)
	e.enqueue(t, NewJob{ID: late, TaskType: "email", ItemSpace: "t"})
	if err := tr.Commit(); err == nil {
		t.Fatal("the split committed over an enqueue that created its chunk lane")
	}
	if ks, _ := e.laneKeys(t, lane1); len(ks) != 1 || ks[0].ID != late {
		t.Fatalf("lane 1 holds %d keys, want only the late job", len(ks))
	}
	seen := map[ID]int{}
	for range 100 {
		c := e.claim(t, ClaimOptions{Max: 5, Lease: 10 * time.Minute})
		for _, l := range c.Jobs {
			seen[l.ID]++
		}
		if len(c.Jobs) == 0 && !c.More && (c.NextVest.IsZero() || c.NextVest.After(e.clk.Now())) {
			break
		}
	}
	for _, j := range append(backlog, NewJob{ID: late}) {
		if seen[j.ID] != 1 {
			t.Fatalf("job %s ran %d times, want 1", j.ID, seen[j.ID])
		}
	}
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers left, want one per lane holding leased jobs (2)", n)
	}
}

// A claim of a backlogged lane in a zone whose lanes all have work, at its
// lane cap, has nowhere to split to: it must not read the backlog it would
// have moved (up to zsplitLanes chunks), only the lane states that told it
// so. Reading both at once cost zones-16 82–102 keys read per job in
// quickbench's backlog mode.
func TestZoneSplitWithNoLaneToFillReadsNoBacklog(t *testing.T) {
	e := newZCEnv(t, Options{ZoneLanes: 2, MaxZoneLanes: 2})
	jobs := make([]NewJob, 400)
	for i := range jobs {
		jobs[i] = NewJob{TaskType: "email", ItemSpace: "big"}
	}
	e.enqueue(t, jobs...)
	e.clk.Advance(2 * time.Second) // backlogged by the growth rule's measure
	before := e.db.Stats()
	c := e.claim(t, ClaimOptions{Max: 5})
	read := e.db.Stats().KeysRead - before.KeysRead
	if len(c.Jobs) != 5 || !c.More {
		t.Fatalf("claim = %d jobs, more %v", len(c.Jobs), c.More)
	}
	if n := e.pointers(t, "email"); n != 2 {
		t.Fatalf("%d pointers, want the zone's 2 lanes (nothing to split into)", n)
	}
	if read >= int64(zsplitChunk(5)) {
		t.Fatalf("the claim read %d keys for 5 jobs with no lane to split into, want fewer than a chunk (%d)", read, zsplitChunk(5))
	}
}
