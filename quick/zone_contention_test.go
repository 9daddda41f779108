package quick

import (
	"testing"
)

// shortEmail makes "email" a short-job task type.
var shortEmail = map[string]TaskTypeOptions{"email": {ShortJobs: true}}

// zoneLanesNow reads the lane count of the zone of "email" and itemSpace
// (1 when it has no meta: Options.ZoneLanes of these tests).
func zoneLanesNow(t *testing.T, e *zenv, itemSpace string) int64 {
	t.Helper()
	v := e.get(t, e.truth.zoneOf("email", itemSpace).metaKey())
	if v == nil {
		return 1
	}
	var m zoneMeta
	if err := m.unmarshal(v); err != nil {
		t.Fatal(err)
	}
	return m.Lanes
}

// Growth on contention (lanestate.go): an enqueue into an empty one-lane
// short-job zone whose commit conflicts with another producer's enqueue
// into the same lane retries and doubles the zone, so later enqueues spread
// over two lane states; an enqueue that does not conflict grows nothing.
func TestEnqueueThatConflictedGrowsItsZone(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 64, TaskTypes: shortEmail}, nil)
	// No conflict: nothing grows.
	if _, err := e.q.Enqueue(e.ctx, NewJob{TaskType: "email", ItemSpace: "other"}); err != nil {
		t.Fatal(err)
	}
	// The other producer creates the lane's pointer between this enqueue's
	// read of the empty lane's state and its commit.
	conflictedEnqueue(t, e, NewJob{TaskType: "email"}, func() { e.zput(t, zjob{}) })
	if n := zoneLanesNow(t, e, ""); n != 2 {
		t.Fatalf("after a conflicted enqueue the zone has %d lanes, want 2", n)
	}
	if n := zoneLanesNow(t, e, "other"); n != 1 {
		t.Fatalf("a zone whose enqueue did not conflict grew to %d lanes", n)
	}
	// Without a conflict the next enqueue leaves the count alone.
	if _, err := e.q.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	if n := zoneLanesNow(t, e, ""); n != 2 {
		t.Fatalf("an enqueue without conflict changed the zone to %d lanes", n)
	}
}

// Growth on contention stops at lanes.ContendedMax: conflicts alone never
// take a zone to MaxZoneLanes.
func TestEnqueueConflictsGrowAZoneUpToContendedMax(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 16, MaxZoneLanes: 64, TaskTypes: shortEmail}, nil)
	if err := e.q.SetZoneLanes(e.ctx, "email", "", 16); err != nil {
		t.Fatal(err)
	}
	// Any job: find one whose lane (of 16) is still empty, so that the
	// hooked producer's job in the same lane conflicts.
	id := NewID(e.clk.Now())
	conflictedEnqueue(t, e, NewJob{TaskType: "email", ID: id}, func() {
		if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email", ID: sameLane(e, id, 16)}); err != nil {
			t.Error(err)
		}
	})
	var m zoneMeta
	if err := m.unmarshal(e.get(t, e.truth.zoneOf("email", "").metaKey())); err != nil {
		t.Fatal(err)
	}
	if m.Lanes != 16 {
		t.Fatalf("a conflicted enqueue grew a zone of 16 lanes to %d; contention stops at 16", m.Lanes)
	}
}

// With per-job leases a zone does not grow on contention: a process's
// claims per second are bounded, and more lanes of a zone that keeps up
// make each job wait longer for its lane's turn (lanestate.go).
func TestEnqueueConflictsDoNotGrowAPerJobZone(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 64}, nil)
	conflictedEnqueue(t, e, NewJob{TaskType: "email"}, func() { e.zput(t, zjob{}) })
	if n := zoneLanesNow(t, e, ""); n != 1 {
		t.Fatalf("a per-job zone grew to %d lanes on an enqueue conflict", n)
	}
}

// conflictedEnqueue enqueues j through a queue whose transaction runs
// other (another producer) before its first commit, and fails unless the
// enqueue conflicted with it and then succeeded.
func conflictedEnqueue(t *testing.T, e *zenv, j NewJob, other func()) {
	t.Helper()
	q := e.hooked(t, other)
	before := e.db.Stats()
	if _, err := q.Enqueue(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Conflicts == 0 {
		t.Fatalf("the enqueue did not conflict with the other producer's: %v", d)
	}
}

// sameLane returns a new ID in the lane of id among n.
func sameLane(e *zenv, id ID, n int) ID {
	for {
		if o := NewID(e.clk.Now()); o != id && laneOfID(o, n) == laneOfID(id, n) {
			return o
		}
	}
}
