package quick

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// A short-job hand-out leased when a move fences its lane must not run at
// the destination while its old holder's lane lease still holds, as a
// per-job lease's copy does not (it vests at the lease's deadline). It
// does today: the hand-out lives in the lane's lease, which the fence
// overwrites, not in the job's key, so the copy vests at the job's own
// time and the destination hands it out at once, while the old holder may
// still run it (until its lane renewal fails). The soak counts such runs
// as re-runs at the fence.
func TestMoveShortHandOutWaitsForItsOldLaneLease(t *testing.T) {
	t.Skip("known defect: a short-job hand-out leased at a move's fence runs at the destination within its old lane lease; remove this skip with the fix")
	clk := clock.NewFake(zepoch)
	a, sa := fdbtest.OpenMem(t, memkv.Options{})
	b, sb := fdbtest.OpenMem(t, memkv.Options{})
	open := func(db kv.Database, space tuple.Subspace) *Queue {
		q, err := Open(context.Background(), db, space, Options{Clock: clk, TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	src, dst := open(a, sa), open(b, sb)
	r := newMoveRun(t, clk)
	enqueueN(t, src, "acme", 30, false)
	clk.Advance(time.Second)
	held := r.claim(src, 5)
	if len(held) == 0 || !held[0].Short() {
		t.Fatalf("claimed %+v; want short-job leases", held)
	}
	if _, err := src.MoveTenant(r.ctx, "acme", dst, MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // well within the old lane lease
	heldAt := map[ID]bool{}
	for _, l := range held {
		heldAt[l.ID] = true
	}
	for range 10 {
		for _, l := range r.claim(dst, 50) {
			if heldAt[l.ID] {
				t.Errorf("job %s handed out at the source runs at the destination %v after the move began, within its old holder's lane lease", l.ID, time.Second)
			}
		}
	}
}
