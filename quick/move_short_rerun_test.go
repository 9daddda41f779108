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
// per-job lease's copy does not (it vests at the lease's deadline). The
// hand-out lives in the lane's lease, not in the job's key, so the fence
// keeps the displaced lease's deadline in the lane state it writes
// (HeldMs) and the copy vests the lane's jobs no earlier
// (quick.move-short-held breaks it).
func TestMoveShortHandOutWaitsForItsOldLaneLease(t *testing.T) {
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
	ids := enqueueN(t, src, "acme", 30, false)
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
		r.fenced[l.ID] = true // handed out at the source: runs once more at the destination
	}
	for range 10 {
		for _, l := range r.claim(dst, 50) {
			if heldAt[l.ID] {
				t.Errorf("job %s handed out at the source runs at the destination %v after the move began, within its old holder's lane lease", l.ID, time.Second)
			}
			r.complete(dst, l)
		}
	}
	// Once the old lane lease has lapsed, the held jobs run at the
	// destination: none is lost.
	r.drain(dst)
	if twice := r.check(ids); twice != len(held) {
		t.Errorf("%d jobs ran twice; want the %d handed out at the fence", twice, len(held))
	}
}
