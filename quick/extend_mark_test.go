package quick

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// Issue 22: Extend (and Checkpoint, and a hand-back's promotions: all move
// a key with zmoveTx) does not read the hand-out mark, unlike the
// placements of place_after_mark_test.go. It need not: the key it writes
// carries its per-job lease's token, so a takeover of the short-job holder
// never counts a run for it (countLapsedShort skips tokened keys), and the
// job is its lease holder's, not the short holder's to hand out. Even when
// the key lands behind the mark (here the extender's clock is 20 s behind,
// further than any lease it may ask for; a call whose retries outlast the
// lease does the same), the job's attempts stay exact and it is not lost.
func TestShortExtendBehindTheHandOutMarkIsNeverCounted(t *testing.T) {
	opts := Options{
		ZoneLanes: 1,
		TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true, MaxAttempts: 5}},
	}
	e := newZEnv(t, opts, nil)
	opts.Clock = clock.NewFake(e.clk.Now().Add(-20 * time.Second))
	opts.Backoff = e.q.opts.Backoff
	behind, err := Open(e.ctx, e.raw, e.space, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := e.truth.Consumer()

	// w0 runs x in short-job mode and hands the lane back with x moved to
	// a lease of its own (its run counted: attempt 1 written).
	res, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	x := res[0].ID
	w0, err := c.Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w0", Max: 1, Keep: true})
	if err != nil || len(w0.Jobs) != 1 || w0.Lane == nil || !w0.Lane.Short {
		t.Fatalf("w0's claim: %+v, %v", w0, err)
	}
	moved, err := c.HandBack(e.ctx, *w0.Lane, w0.Jobs, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	xl := moved[0]

	// w1 leases the lane in short-job mode and hands out y: its mark.
	e.clk.Advance(time.Second)
	if _, err := e.truth.Enqueue(e.ctx, NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	w1 := holdShort(t, e, 1)
	y := w1.Jobs[0].ID

	// x's holder renews by a clock 20 s behind: its key lands 10 s before
	// now, behind w1's mark.
	if _, err := behind.Extend(e.ctx, xl, MinLease); err != nil {
		t.Fatal(err)
	}
	ks, vs := e.laneKeys(t, e.lane0("email", ""))
	if len(ks) != 2 || vs[0].Token == 0 || ks[0].ID != x || ks[1].ID != y {
		t.Fatalf("lane keys %+v: want x (extended behind the mark, with its token) then y", ks)
	}

	// w1 dies (and x's renewer: its lease lapses too). The takeover counts
	// w1's run of y, not one of x: both come back at attempt 2.
	e.clk.Advance(e.truth.opts.LaneLeaseTime + time.Second)
	w2, err := c.Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w2", Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := map[ID]int{}
	for _, l := range w2.Jobs {
		got[l.ID] = l.Attempt
	}
	if len(got) != 2 || got[x] != 2 || got[y] != 2 || w2.DeadLettered != 0 {
		t.Fatalf("takeover claimed %v (x=%s, y=%s), dead-lettered %d: want both at attempt 2", got, x, y, w2.DeadLettered)
	}
}
