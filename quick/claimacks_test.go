package quick_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A claim continuing on its lane carries the acks of the jobs it finished:
// one commit completes them and takes the next jobs.
func TestClaimCarriesAcksInItsCommit(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	for range 3 {
		e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "a"})
	}
	first := e.zclaim(t, quick.ClaimOptions{Max: 1, Keep: true})
	if len(first.Jobs) != 1 || first.Lane == nil {
		t.Fatalf("first claim = %+v", first)
	}
	done := quick.Ack{Lease: first.Jobs[0], Kind: quick.AckComplete}
	if !quick.AckJoinsClaim(done) {
		t.Fatal("a completion of a per-job lease does not join a claim")
	}
	before := e.db.Stats()
	next := e.zclaim(t, quick.ClaimOptions{Max: 1, Keep: true, Lane: first.Lane, Acks: []quick.Ack{done}})
	d := e.db.Stats().Sub(before)
	if d.Commits != 1 {
		t.Fatalf("claim with an ack made %d commits, want 1", d.Commits)
	}
	if len(next.Acked) != 1 || next.Acked[0].Err != nil {
		t.Fatalf("acked = %+v", next.Acked)
	}
	if len(next.Jobs) != 1 || next.Jobs[0].ID == first.Jobs[0].ID {
		t.Fatalf("next claim took %+v", next.Jobs)
	}
	if info, err := e.q.Get(e.ctx, first.Jobs[0].ID); !finished(info, err) {
		t.Fatalf("completed job still there: %+v, %v", info, err)
	}
	// A fail moves the job within the lane the claim holds: it never joins.
	if quick.AckJoinsClaim(quick.Ack{Lease: next.Jobs[0], Kind: quick.AckFail}) {
		t.Fatal("a fail joins a claim")
	}
}

// An ack joined to a claim is checked as Ack checks it: a lease lost to
// another holder fails that ack alone (a *LeaseLostError), writes nothing,
// and the claim still commits. The deliberate break
// quick.claim-acks-unchecked takes every joined ack for one an earlier
// attempt applied, and the lost lease passes for completed.
func TestClaimAcksUnderALostLeaseFailAlone(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "a"})
	old := e.zclaim(t, quick.ClaimOptions{Holder: "w1", Max: 1}).Jobs[0]
	e.clk.Advance(time.Minute + time.Millisecond)
	taken := e.zclaim(t, quick.ClaimOptions{Holder: "w2", Max: 1})
	if len(taken.Jobs) != 1 || taken.Jobs[0].ID != old.ID {
		t.Fatalf("takeover = %+v", taken.Jobs)
	}
	e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "b"})
	res := e.zclaim(t, quick.ClaimOptions{Holder: "w1", Max: 1, Acks: []quick.Ack{{Lease: old, Kind: quick.AckComplete}}})
	var lost *quick.LeaseLostError
	if len(res.Acked) != 1 || !errors.As(res.Acked[0].Err, &lost) || lost.ID != old.ID {
		t.Fatalf("ack of a lost lease in a claim = %+v, want a LeaseLostError", res.Acked)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].ItemSpace != "b" {
		t.Fatalf("the claim beside the lost ack took %+v", res.Jobs)
	}
	if err := e.q.Complete(e.ctx, taken.Jobs[0]); err != nil {
		t.Fatalf("the new holder's complete: %v", err)
	}
}

// A claim that fails applies none of its acks: the lane it continued on was
// taken over, and the job it would have completed is still held.
func TestClaimThatFailsAppliesNoAck(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	for range 3 {
		e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "a"})
	}
	first := e.zclaim(t, quick.ClaimOptions{Max: 1, Keep: true, Lease: 10 * time.Minute})
	if first.Lane == nil {
		t.Fatal("lane not kept")
	}
	// The lane lease lapses and another holder takes the lane.
	e.clk.Advance(time.Minute)
	if got := e.zclaim(t, quick.ClaimOptions{Holder: "w2", Max: 1}); len(got.Jobs) != 1 {
		t.Fatalf("takeover of the lane = %+v", got)
	}
	_, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{
		TaskType: "email", Holder: "w", Max: 1, Lease: time.Minute, Keep: true, Lane: first.Lane,
		Acks: []quick.Ack{{Lease: first.Jobs[0], Kind: quick.AckComplete}},
	})
	if !quick.IsLaneLost(err) {
		t.Fatalf("claim on a lost lane: %v, want lane lost", err)
	}
	if err := e.q.Complete(e.ctx, first.Jobs[0]); err != nil {
		t.Fatalf("the job the failed claim carried an ack for is not held any more: %v", err)
	}
}

// Acks a claim cannot carry are refused before anything runs.
func TestClaimAcksBadOptions(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	l := e.zclaim(t, quick.ClaimOptions{Max: 1}).Jobs[0]
	many := make([]quick.Ack, quick.MaxClaimAcks+1)
	for i := range many {
		many[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
	}
	for name, acks := range map[string][]quick.Ack{
		"fail":        {{Lease: l, Kind: quick.AckFail}},
		"no lease":    {{Kind: quick.AckComplete}},
		"too many":    many,
		"other types": {{Lease: func() quick.Lease { o := l; o.TaskType = "sms"; return o }(), Kind: quick.AckComplete}},
	} {
		_, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Acks: acks})
		if !errors.Is(err, quick.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatalf("a refused claim touched the lease: %v", err)
	}
}
