package quick

import (
	"math/rand/v2"
	"testing"
)

// A scan takes the zone whose turn it is: against a hot zone's 16 lanes,
// all older, a cold zone's one lane is taken every other scan, not one
// time in 17; and a zone never taken goes first.
func TestPickByTurnTakesEachZoneOnceARound(t *testing.T) {
	var es []pointerEntry
	for i := range 16 {
		es = append(es, pointerEntry{Lane: i, Value: pointerValue{Zone: []byte("hot")}})
	}
	es = append(es, pointerEntry{Value: pointerValue{Zone: []byte("cold")}})
	rng := rand.New(rand.NewPCG(1, 2))
	q := &Queue{pickRand: rng.Uint64}
	var got []string
	for range 10 {
		got = append(got, string(es[q.pickByTurn("email", es)].Value.Zone))
	}
	for i, z := range got {
		want := []string{"hot", "cold"}[i%2] // none taken yet: the oldest first
		if z != want {
			t.Fatalf("scans took %v, want the two zones in turn", got)
		}
	}
	es = append(es, pointerEntry{Value: pointerValue{Zone: []byte("new")}})
	if z := string(es[q.pickByTurn("email", es)].Value.Zone); z != "new" {
		t.Fatalf("a scan took %q, want the zone it never took", z)
	}
	// Within a zone, one of its oldest lanes.
	for range 100 {
		if i := q.pickByTurn("email", es[:16]); es[i].Lane >= turnLanes {
			t.Fatalf("a scan took the hot zone's lane %d, want one of its %d oldest", es[i].Lane, turnLanes)
		}
	}
}
