package quick_test

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// The empty-zone race, interleaved by hand: a claim that empties a lane
// and removes its pointer, against an enqueue into that lane, each slipped
// between the other's reads and its commit. Whichever commits first, the
// other conflicts and retries, and the new job keeps a pointer: 0 lost.
func TestZoneEmptyZoneRace(t *testing.T) {
	// setup leaves a lane whose only job is exhausted: the next claim
	// dead-letters it and, finding the lane empty, removes its pointer.
	setup := func(t *testing.T) *faultEnv {
		e := newFaultEnv(t, kv.Faults{}, quick.Options{})
		if _, err := e.truth.Enqueue(e.ctx, quick.NewJob{TaskType: "email", ItemSpace: "t", MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		c, err := e.truth.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "gone", Lease: time.Minute})
		if err != nil || len(c.Jobs) != 1 {
			t.Fatalf("setup claim = %+v, %v", c, err)
		}
		e.clk.Advance(time.Minute)
		return e
	}
	claimOpts := quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute}
	newJob := quick.NewJob{TaskType: "email", ItemSpace: "t"}
	// findJob asserts that the job is claimable: its lane has a pointer.
	findJob := func(t *testing.T, e *faultEnv, id quick.ID, got []quick.Lease) {
		t.Helper()
		for _, l := range got {
			if l.ID == id {
				return
			}
		}
		c, err := e.truth.Consumer().Claim(e.ctx, claimOpts)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Jobs) != 1 || c.Jobs[0].ID != id {
			t.Fatalf("the job enqueued during the race is lost: claim = %+v", c)
		}
	}

	t.Run("enqueue-commits-first", func(t *testing.T) {
		e := setup(t)
		var id quick.ID
		fired := true // not while opening
		db := &hookDB{Database: e.faulty, before: func(kv.Transaction) {
			if fired {
				return
			}
			fired = true
			res, err := e.truth.Enqueue(e.ctx, newJob)
			if err != nil {
				t.Error(err)
			}
			id = res[0].ID
		}}
		q, err := quick.Open(e.ctx, db, e.space, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		fired = false
		c, err := q.Consumer().Claim(e.ctx, claimOpts)
		if err != nil {
			t.Fatal(err)
		}
		if !fired || c.DeadLettered != 1 {
			t.Fatalf("claim = %+v (hook fired %v), want the exhausted job dead-lettered", c, fired)
		}
		findJob(t, e, id, c.Jobs)
	})

	t.Run("claim-commits-first", func(t *testing.T) {
		e := setup(t)
		fired := true // not while opening
		var claimed quick.Claimed
		db := &hookDB{Database: e.faulty, before: func(kv.Transaction) {
			if fired {
				return
			}
			fired = true
			var err error
			claimed, err = e.truth.Consumer().Claim(e.ctx, claimOpts)
			if err != nil {
				t.Error(err)
			}
		}}
		q, err := quick.Open(e.ctx, db, e.space, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		fired = false
		res, err := q.Enqueue(e.ctx, newJob)
		if err != nil {
			t.Fatal(err)
		}
		if !fired || claimed.DeadLettered != 1 || len(claimed.Jobs) != 0 {
			t.Fatalf("the claim slipped in = %+v (hook fired %v), want the exhausted job dead-lettered and nothing else", claimed, fired)
		}
		findJob(t, e, res[0].ID, nil)
	})
}
