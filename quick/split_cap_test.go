package quick

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Issue 22, item 7 (suspected by reading, proven here): after SetZoneLanes
// above MaxZoneLanes, a split reads only the first MaxZoneLanes+1 lane
// states; a lane past them used to look empty, and the split overwrote its
// state, clobbering a live lease's token. A split picks only lanes whose
// state it read.
func TestZoneSplitNeverTakesALaneItDidNotRead(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 2}, nil)
	e.zput(t, make([]zjob, 50)...) // lane 0, placed by one lane
	if err := e.q.SetZoneLanes(e.ctx, "email", "", 4); err != nil {
		t.Fatal(err)
	}
	// Lanes 1 to 3 are held by other workers (leases until a minute on).
	deadline := e.clk.Now().Add(time.Minute).UnixMilli()
	err := e.truth.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		for lane := 1; lane <= 3; lane++ {
			l := laneRef{z: e.truth.zoneOf("email", ""), prio: Normal, lane: lane}
			e.truth.movePointer(tr, l, -1, laneState{PtrMs: deadline, Token: uint64(100 + lane), Holder: "other"})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Lane 0 is backlogged: its oldest job waited 2 s.
	e.clk.Advance(2 * time.Second)
	res, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(res.Jobs))
	}
	for lane := 1; lane <= 3; lane++ {
		s, ok := e.laneState(t, laneRef{z: e.truth.zoneOf("email", ""), prio: Normal, lane: lane})
		if !ok || s.Token != uint64(100+lane) || s.PtrMs != deadline {
			t.Fatalf("lane %d held by another worker: state %+v after a split; want its lease untouched", lane, s)
		}
	}
}
