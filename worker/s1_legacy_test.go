package worker

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TestZonesLegacyClaimWakesWhenReservationsReturn: in a zones runner the
// schema-1 claim loop shares the handler slots with the zones claims,
// which reserve slots for the claims they have in flight. A schema-1 claim
// loop that found every slot taken by such reservations waited for a
// handler to return (slotFreed), which a reservation given back never
// signals: with nothing left in the zones, no handler returned again, and
// the schema-1 jobs of the lanes that worker watched stayed queued while
// it heartbeat (the migration soak's stall, TestShortSoakMigrate with
// seed 1). It must wake when a reservation comes back.
func TestZonesLegacyClaimWakesWhenReservationsReturn(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	var ids []quick.ID
	for range 3 {
		ids = append(ids, e.enqueue(quick.NewJob{TaskType: "mig"})[0].ID)
	}
	zq, err := quick.Open(e.ctx, e.db, e.space, quick.Options{Layout: quick.LayoutZones, Clock: e.clk, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e.q = zq
	c := newRuns()
	ws := e.zonesWorkers(1, "mig", countingHandler(c), HandlerOptions{Concurrency: 2})
	r := ws[0].byType["mig"]
	// Every slot reserved, as by zones claims in flight, when the schema-1
	// claim loop first looks.
	held := r.reserve(r.capacity())
	if held != r.capacity() {
		t.Fatalf("reserved %d of %d slots", held, r.capacity())
	}
	e.start(ws[0])
	e.waitFor("the schema-1 jobs to be found", func() bool {
		on, known := r.legacy.get()
		return on && known
	})
	e.step(2*time.Second, 100*time.Millisecond, ws...)
	if n := c.finished(); n != 0 {
		t.Fatalf("%d jobs ran with every slot reserved", n)
	}
	// The claims in flight end: their reservations come back, and no
	// handler returns.
	r.unreserve(held)
	for waited := time.Duration(0); c.finished() < len(ids); waited += time.Second {
		if waited > 30*time.Second {
			t.Fatalf("%d of %d schema-1 jobs ran in %v after the slots came back", c.finished(), len(ids), waited)
		}
		e.step(time.Second, 100*time.Millisecond, ws...)
	}
	c.check(t, ids, true)
}
