package quick

import (
	"testing"
	"time"
)

// Issue 22, item 1: an enqueue that commits while a short-job holder has
// handed jobs out of its lane must never place its job behind the
// holder's hand-out mark. Enqueue fixes its time before its retry loop; its
// first attempt conflicts with the claim that leases the lane, and the
// retry used to write a key vesting before a job the holder had already
// handed out: continuing claims never saw it, and when the holder died the
// takeover counted a run for it and dead-lettered it unrun.
func TestShortEnqueueRetryLandsAfterTheHandOutMark(t *testing.T) {
	e := newZEnv(t, Options{
		ZoneLanes: 1,
		TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true, MaxAttempts: 1}},
	}, nil)
	if _, err := e.q.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	var w1 Claimed
	q := e.hooked(t, func() {
		// Between the enqueue's reads and its commit: another client
		// enqueues a job 10 ms later by its clock, and w1 leases the
		// lane and hands both out (its cursor is at the later one).
		e.clk.Advance(10 * time.Millisecond)
		if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
			t.Error(err)
			return
		}
		var err error
		w1, err = e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w1", Max: 10, Keep: true})
		if err != nil {
			t.Error(err)
		}
	})
	before := e.db.Stats()
	res, err := q.Enqueue(e.ctx, NewJob{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Conflicts == 0 {
		t.Fatalf("the enqueue did not conflict with the claim that leased its lane: %v", d)
	}
	if len(w1.Jobs) != 2 || w1.Lane == nil || !w1.Lane.Short {
		t.Fatalf("w1's claim: %d jobs, pointer %+v; want the two jobs and the lane kept in short-job mode", len(w1.Jobs), w1.Lane)
	}
	late := res[0].ID
	// Placed just after the mark, it vests at most a millisecond after the
	// job the mark names.
	if mark := w1.Jobs[1].VestedAt; res[0].RunAt.After(mark.Add(time.Millisecond)) {
		t.Fatalf("the late job runs at %v, over a millisecond after the mark's %v", res[0].RunAt, mark)
	}
	e.clk.Advance(time.Millisecond)
	// w1 continues on its lane: the job enqueued meanwhile is its to run.
	next, err := e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w1", Max: 10, Keep: true, Lane: w1.Lane})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Jobs) != 1 || next.Jobs[0].ID != late {
		ks, _ := e.laneKeys(t, e.lane0("email", ""))
		t.Fatalf("w1's next claim handed out %d jobs; want the late job %s (lane keys %+v, cursor %x)", len(next.Jobs), late, ks, w1.Lane.cursor)
	}
	// w1 dies; the takeover counts the runs of what w1 handed out: each of
	// the three ran once and is dead-lettered (MaxAttempts 1) — none unrun.
	e.clk.Advance(e.q.opts.LaneLeaseTime + time.Second)
	dead := 0
	for i := 0; i < 3; i++ {
		r, err := e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w2", Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		dead += r.DeadLettered
		if len(r.Jobs) != 0 {
			t.Fatalf("the takeover ran %d jobs w1 had run with their one attempt", len(r.Jobs))
		}
	}
	if dead != 3 {
		t.Fatalf("%d jobs dead-lettered after w1 died, want the 3 it ran", dead)
	}
}
