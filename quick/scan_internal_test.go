package quick

import (
	"math/rand/v2"
	"testing"
)

// A scanning claim picks its lane by zone: a cold zone's one lane against a
// hot zone's 16 is taken about half the time, not one time in 17.
func TestPickByZoneCountsEachZoneOnce(t *testing.T) {
	var es []pointerEntry
	for i := range 16 {
		es = append(es, pointerEntry{Lane: i, Value: pointerValue{Zone: []byte("hot")}})
	}
	es = append(es, pointerEntry{Value: pointerValue{Zone: []byte("cold")}})
	rng := rand.New(rand.NewPCG(1, 2))
	q := &Queue{pickRand: rng.Uint64}
	cold := 0
	const trials = 1000
	for range trials {
		if string(es[q.pickByZone(es)].Value.Zone) == "cold" {
			cold++
		}
	}
	if cold < trials*4/10 || cold > trials*6/10 {
		t.Fatalf("the cold zone was picked %d times in %d, want about half", cold, trials)
	}
}
