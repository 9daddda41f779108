package quick_test

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Attempts in short-job mode: a hand-out writes nothing per job, yet a
// holder that dies mid-batch has run its jobs once. The worker that takes
// the lapsed lane over must count that run: its per-job leases show the
// attempt after it, and a job whose last attempt the dead holder ran is
// dead-lettered, not run again. Before the lane's hand-out mark the
// takeover showed attempt 1 for a second run (worker B after A was
// SIGKILLed mid-batch), and a job that killed its holders ran about twice
// per counted attempt.
func TestShortTakeoverCountsTheLapsedHoldersRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		// fault: A's continuing claim fails once with 1021, not applied:
		// its retry must still leave the mark of what it handed out.
		fault bool
	}{{"plain", false}, {"continuing claim hit by 1021", true}} {
		t.Run(c.name, func(t *testing.T) {
			q, db, clk := zshortQueue(t)
			ctx := context.Background()
			// One lane of ten jobs: the six A takes, in two batches,
			// with 1, 2 and 0 (the default) attempts, then four it never
			// takes.
			var ids []quick.ID
			for i := range 10 {
				j := quick.NewJob{TaskType: "s", ItemSpace: "a", Payload: []byte{byte(i)}}
				if i < 6 {
					j.MaxAttempts = []int{1, 2, 0}[i%3]
				}
				js, err := q.Enqueue(ctx, j)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, js[0].ID)
				clk.Advance(time.Millisecond) // one vesting order: the enqueue order
			}
			claim := func(holder string, max int, p *quick.LaneLease) quick.Claimed {
				t.Helper()
				res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{
					TaskType: "s", Holder: holder, Max: max, Lease: quick.MinLease,
					Lane: p,
					Keep: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			a1 := claim("A", 3, nil)
			if c.fault {
				db.armed.Store(true)
			}
			a2 := claim("A", 3, a1.Lane)
			if db.armed.Load() {
				t.Fatal("the fault was not injected")
			}
			handed := append(a1.Jobs, a2.Jobs...)
			if len(handed) != 6 {
				t.Fatalf("A was handed %d jobs, want 6", len(handed))
			}
			for i, l := range handed {
				if !l.Short() || l.Attempt != 1 || l.ID != ids[i] {
					t.Fatalf("A's hand-out %d: %s short %v attempt %d; want %s short at attempt 1", i, l.ID, l.Short(), l.Attempt, ids[i])
				}
			}
			// A is SIGKILLed: no ack, no hand-back. Its lane lease lapses.
			clk.Advance(q.Options().LaneLeaseTime)
			b := claim("B", 10, nil)
			got := map[quick.ID]quick.Lease{}
			for _, l := range b.Jobs {
				if l.Short() {
					t.Fatalf("B took %s under the lane lease; a lapsed lane is worked with per-job leases", l.ID)
				}
				got[l.ID] = l
			}
			for i, id := range ids {
				l, ok := got[id]
				switch {
				case i < 6 && i%3 == 0: // MaxAttempts 1, spent by A
					if ok {
						t.Errorf("job %d (1 attempt, run by A) taken again at attempt %d; want it dead-lettered", i, l.Attempt)
					}
				case i < 6: // run by A: B's is the second run
					if !ok || l.Attempt != 2 {
						t.Errorf("job %d (run by A): taken %v at attempt %d, want 2", i, ok, l.Attempt)
					}
				default: // never handed out
					if !ok || l.Attempt != 1 {
						t.Errorf("job %d (never handed out): taken %v at attempt %d, want 1", i, ok, l.Attempt)
					}
				}
			}
			if b.DeadLettered != 2 {
				t.Errorf("B's claim dead-lettered %d jobs, want the 2 whose only attempt A ran", b.DeadLettered)
			}
			dead, err := q.ListDead(ctx, quick.ListDeadOptions{TaskType: "s"})
			if err != nil {
				t.Fatal(err)
			}
			deadIDs := map[quick.ID]bool{}
			for _, j := range dead.Jobs {
				deadIDs[j.ID] = true
			}
			if len(dead.Jobs) != 2 || !deadIDs[ids[0]] || !deadIDs[ids[3]] {
				t.Errorf("dead letters %v; want jobs 0 and 3", deadIDs)
			}
			// B vanishes too: the jobs at their last attempt (MaxAttempts
			// 2) are dead-lettered by the next takeover; the others run a
			// third time. B held them with per-job leases: counted once.
			clk.Advance(quick.MinLease + q.Options().LaneLeaseTime)
			c3 := claim("C", 10, nil)
			for _, l := range c3.Jobs {
				if l.Attempt < 2 {
					t.Errorf("C took %s at attempt %d after two holders vanished", l.ID, l.Attempt)
				}
				if l.ID == ids[1] || l.ID == ids[4] {
					t.Errorf("C took job %s again; its 2 attempts were spent by A and B", l.ID)
				}
			}
			if c3.DeadLettered != 2 {
				t.Errorf("C's claim dead-lettered %d jobs, want the 2 whose last attempt B ran", c3.DeadLettered)
			}
		})
	}
}

// A holder that acks its batch and hands its lane back leaves nothing to
// count: the next holder, short or not, runs the lane's jobs at attempt 1.
func TestShortHandBackLeavesNoRunToCount(t *testing.T) {
	q, _, clk := zshortQueue(t)
	ctx := context.Background()
	for i := range 4 {
		if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "s", ItemSpace: "a", Payload: []byte{byte(i)}, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{
		TaskType: "s", Holder: "A", Max: 2, Lease: quick.MinLease,
		Keep: true,
	})
	if err != nil || len(res.Jobs) != 2 || res.Lane == nil {
		t.Fatalf("A's claim = %+v, %v", res, err)
	}
	for _, l := range res.Jobs {
		if err := q.Complete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Consumer().HandBack(ctx, *res.Lane, nil, quick.MinLease); err != nil {
		t.Fatal(err)
	}
	clk.Advance(q.Options().LaneLeaseTime)
	b, err := q.Consumer().Claim(ctx, quick.ClaimOptions{
		TaskType: "s", Holder: "B", Max: 10, Lease: quick.MinLease,
		Keep: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Jobs) != 2 || b.DeadLettered != 0 || b.Lane == nil || b.Lane.Lapsed {
		t.Fatalf("B's claim = %d jobs, %d dead, pointer %+v; want the 2 left, none dead, not lapsed", len(b.Jobs), b.DeadLettered, b.Lane)
	}
	for _, l := range b.Jobs {
		if l.Attempt != 1 {
			t.Fatalf("B's job %s at attempt %d, want 1", l.ID, l.Attempt)
		}
	}
}
