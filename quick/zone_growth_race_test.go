package quick

import (
	"testing"
	"time"
)

// Issue 22, item 7 (suspected by reading, proven here): growth at enqueue
// wrote the zone meta blindly from its snapshot read, so an operator's
// SetZoneLanes committed meanwhile was undone (the zone doubled from the
// count before it). The growing enqueue now conflicts with it, retries and
// grows from the operator's count.
func TestZoneGrowthAtEnqueueKeepsAConcurrentSetZoneLanes(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1, MaxZoneLanes: 64}, nil)
	if err := e.q.SetZoneLanes(e.ctx, "email", "", 4); err != nil {
		t.Fatal(err)
	}
	// IDs in lane 0 under 4 lanes (and so under 2).
	lane0 := func() ID {
		for {
			if id := NewID(e.clk.Now()); laneOfID(id, 4) == 0 {
				return id
			}
		}
	}
	if _, err := e.q.Enqueue(e.ctx, NewJob{ID: lane0(), TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	// Nobody claims: lane 0's pointer waits, vested, for 3 s.
	e.clk.Advance(3 * time.Second)
	q := e.hooked(t, func() {
		if err := e.truth.SetZoneLanes(e.ctx, "email", "", 2); err != nil {
			t.Error(err)
		}
	})
	if _, err := q.Enqueue(e.ctx, NewJob{ID: lane0(), TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	var m zoneMeta
	if err := m.unmarshal(e.get(t, e.truth.zoneOf("email", "").metaKey())); err != nil {
		t.Fatal(err)
	}
	if m.Lanes != 4 {
		t.Fatalf("the zone has %d lanes; want 4, doubled from the operator's 2 (8 undid it)", m.Lanes)
	}
}
