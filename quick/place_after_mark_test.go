package quick

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// Issue 22, item 1, beyond Enqueue: every placement of a key into a lane
// held in short-job mode (run-now, requeue, and the acks that move a key)
// lands after the holder's hand-out mark. One behind it is never handed
// out by the holder's continuing claims (they read after the cursor), and
// a takeover after the holder dies counts a run for it that never was.

// shortMarkEnv is a zones queue of one lane per zone for the short-job,
// trackable type "email", and a second client of the same queue whose
// clock is a second behind (the documented way a placement lands before
// the cursor's time).
func shortMarkEnv(t *testing.T) (*zenv, *Queue) {
	t.Helper()
	opts := Options{
		ZoneLanes: 1,
		TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true, MaxAttempts: 1}},
	}
	e := newZEnv(t, opts, nil)
	opts.Clock = clock.NewFake(e.clk.Now().Add(-time.Second))
	opts.Backoff = e.q.opts.Backoff
	behind, err := Open(e.ctx, e.raw, e.space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, behind
}

// holdShort has w1 lease the lane of "email" in short-job mode and hand
// out every vested job, keeping the lane.
func holdShort(t *testing.T, e *zenv, want int) Claimed {
	t.Helper()
	w1, err := e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w1", Max: 10, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(w1.Jobs) != want || w1.Lane == nil || !w1.Lane.Short {
		t.Fatalf("w1's claim: %d jobs, pointer %+v; want %d and the lane kept in short-job mode", len(w1.Jobs), w1.Lane, want)
	}
	return w1
}

// continueShort is w1's next claim on its lane, a millisecond later: it
// must hand out exactly the job id.
func continueShort(t *testing.T, e *zenv, w1 Claimed, id ID) {
	t.Helper()
	e.clk.Advance(time.Millisecond)
	next, err := e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w1", Max: 10, Keep: true, Lane: w1.Lane})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Jobs) != 1 || next.Jobs[0].ID != id {
		ks, _ := e.laneKeys(t, e.lane0("email", ""))
		t.Fatalf("w1's next claim handed out %d jobs; want %s, placed behind its cursor otherwise (lane keys %+v)", len(next.Jobs), id, ks)
	}
}

func TestShortRunNowLandsAfterTheHandOutMark(t *testing.T) {
	e, behind := shortMarkEnv(t)
	later, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email", Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	w1 := holdShort(t, e, 1)
	// A client whose clock is behind w1's runs the scheduled job now: by
	// its clock, before the job w1 handed out.
	if err := behind.RunNow(e.ctx, later[0].ID); err != nil {
		t.Fatal(err)
	}
	continueShort(t, e, w1, later[0].ID)
}

func TestShortRequeueLandsAfterTheHandOutMark(t *testing.T) {
	e, behind := shortMarkEnv(t)
	res, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.truth.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w0", Max: 1})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(c.Jobs), err)
	}
	if err := e.truth.DeadLetter(e.ctx, c.Jobs[0], "bad"); err != nil {
		t.Fatal(err)
	}
	if c.Lane != nil {
		if err := e.truth.Consumer().ReleaseLane(e.ctx, *c.Lane); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Advance(time.Second)
	if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	w1 := holdShort(t, e, 1)
	if err := behind.Requeue(e.ctx, res[0].ID); err != nil {
		t.Fatal(err)
	}
	continueShort(t, e, w1, res[0].ID)
}

func TestShortReleaseInPlaceLandsAfterTheHandOutMark(t *testing.T) {
	e, _ := shortMarkEnv(t)
	for i := 0; i < 2; i++ {
		if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
			t.Fatal(err)
		}
	}
	w1 := holdShort(t, e, 2)
	// w1 gives the first job back where it is: behind its own cursor.
	if err := e.truth.Release(e.ctx, w1.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	continueShort(t, e, w1, w1.Jobs[0].ID)
}
