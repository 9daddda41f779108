//go:build fdb

package quick

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
)

// A tenant moved between two real FoundationDB clusters (two fdbserver
// processes on loopback, or FDB_CLUSTER_FILE and
// QUICKFDB_SECOND_CLUSTER_FILE) while claims run at both ends between
// its batches: 0 lost, every job completes once, except jobs leased at
// the fence, which run at most twice; nothing of the tenant is left at the
// source. Skips where FoundationDB is missing.
func TestMoveTenantBetweenTwoClusters(t *testing.T) {
	a, sa := fdbtest.Open(t)
	b, sb := fdbtest.OpenSecond(t)
	clk := clock.NewFake(zepoch)
	src := openSide(t, a, sa.Sub("q"), nil, clk, nil)
	dst := openSide(t, b, sb.Sub("q"), nil, clk, nil)
	r := newMoveRun(t, clk)
	ids := enqueueN(t, src.truth, "acme", 1000, true)
	clk.Advance(time.Second)
	var held []Lease
	for len(held) < 20 {
		for _, l := range r.claim(src.q, 10) {
			r.fenced[l.ID] = true
			held = append(held, l)
		}
	}
	hook := func(_, name string) error {
		for _, q := range []*Queue{src.q, dst.q} {
			for _, l := range r.claim(q, 5) {
				r.complete(q, l)
			}
		}
		if len(held) > 0 {
			r.complete(src.q, held[0])
			held = held[1:]
		}
		clk.Advance(100 * time.Millisecond)
		return nil
	}
	res, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{TaskType: "email", Batch: 100, afterStep: hook})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	r.drain(dst.q)
	r.drain(src.q)
	twice := r.check(ids)
	t.Logf("moved %d jobs between two clusters; %d leased at the fence, %d ran twice", res.Jobs, len(r.fenced), twice)
	assertNoTenantKeys(t, src.truth, "acme", ids)
	assertNoFence(t, dst.truth, "acme")
}
