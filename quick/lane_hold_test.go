package quick

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Surviving breaks of issue 22's audit, pinned: a claim never leases a
// lane through a stale pointer (one its lane state does not name), and a
// lane kept across claims is renewed by them.

func (e *zenv) claimZ(t *testing.T, holder string, max int, p *LaneLease) Claimed {
	t.Helper()
	res, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: holder, Max: max, Lease: time.Minute, Keep: true, Lane: p})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestZoneClaimNeverLeasesAStalePointer(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 1}, nil)
	e.zput(t, make([]zjob, 10)...)
	w1 := e.claimZ(t, "w1", 2, nil)
	if len(w1.Jobs) != 2 || w1.Lane == nil {
		t.Fatalf("w1: %d jobs, pointer %v; want 2 and the lane kept", len(w1.Jobs), w1.Lane)
	}
	// A stale pointer of the held lane, vested (left by a crash between
	// writes, or a copy): its lane state names w1's deadline, not it.
	l := e.lane0("email", "")
	stale := e.clk.Now().Add(-time.Second).UnixMilli()
	err := e.truth.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(e.truth.pointerKeyOf(l, stale), pointerValueOf(l))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w2", Max: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(w2.Jobs) != 0 {
		t.Fatalf("w2 took %d jobs of the lane w1 holds, through a stale pointer", len(w2.Jobs))
	}
	if e.get(t, e.truth.pointerKeyOf(l, stale)) != nil {
		t.Fatal("the stale pointer was not cleared")
	}
	// w1 still holds the lane.
	if next := e.claimZ(t, "w1", 2, w1.Lane); len(next.Jobs) != 2 {
		t.Fatalf("w1's next claim took %d jobs, want 2", len(next.Jobs))
	}
}

func TestZoneKeptLaneIsRenewedByItsClaims(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 1}, nil)
	e.zput(t, make([]zjob, 10)...)
	pl := e.q.opts.LaneLeaseTime
	w1 := e.claimZ(t, "w1", 1, nil)
	if w1.Lane == nil {
		t.Fatal("w1 did not keep the lane")
	}
	first := w1.Lane.Deadline
	// Past half its lease, a claim that continues on the lane renews it.
	e.clk.Advance(pl * 3 / 4)
	next := e.claimZ(t, "w1", 1, w1.Lane)
	if next.Lane == nil || !next.Lane.Deadline.After(first) {
		t.Fatalf("the continuing claim kept the lane until %v, not after %v", next.Lane.Deadline, first)
	}
	// Past the first deadline, nobody else takes the lane.
	e.clk.Advance(pl / 2)
	w2, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w2", Max: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(w2.Jobs) != 0 {
		t.Fatalf("w2 took %d jobs of the lane w1 renewed", len(w2.Jobs))
	}
	if again := e.claimZ(t, "w1", 1, next.Lane); len(again.Jobs) != 1 {
		t.Fatalf("w1's claim after the renewal took %d jobs, want 1", len(again.Jobs))
	}
}
