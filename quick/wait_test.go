package quick_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// waitHangGuard bounds, in real time, the waits of these tests on a
// condition: a failure deadline that makes a hang fail loudly, never a
// measured duration. Nothing here waits for time to pass: Wait wakes on
// the kv watch of the job's outcome (no clock, no polling), armed and
// fired by the transactions the test runs, so the tests are driven by
// those transactions (and the fake clock where they use time).
const waitHangGuard = time.Minute

// waitAsync runs Wait in a goroutine and returns its result channel, once
// the waiter has armed its watch (the database's watch counter moved).
func waitAsync(t *testing.T, e *env, id quick.ID) <-chan quick.Outcome {
	t.Helper()
	before := e.db.Stats().Watches
	ch := make(chan quick.Outcome, 1)
	go func() {
		o, err := e.q.Wait(e.ctx, id)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		ch <- o
	}()
	deadline := time.Now().Add(waitHangGuard)
	for e.db.Stats().Watches == before {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: the waiter never armed its watch in %v", waitHangGuard)
		}
		time.Sleep(time.Millisecond) // waiting for a condition, not for time
	}
	return ch
}

func got(t *testing.T, ch <-chan quick.Outcome) quick.Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(waitHangGuard):
		t.Fatalf("hang guard: Wait did not return in %v after the job finished (the finishing commit must fire its watch)", waitHangGuard)
	}
	return quick.Outcome{}
}

// TestWaitOutcomes: a waiter wakes in the commit that finishes the job, and
// completed, dead-lettered and cancelled are told apart.
func TestWaitOutcomes(t *testing.T) {
	t.Skip("TODO(issue 21, surfaces): Wait on a pending job (lookup) reads schema 1 until the surfaces branch lands")
	e := newEnv(t, quick.Options{})
	ids := e.enqueue(t,
		quick.NewJob{TaskType: "email", Waitable: true},
		quick.NewJob{TaskType: "email", Waitable: true},
		quick.NewJob{TaskType: "email", Waitable: true},
	)
	done, dead, cancelled := ids[0].ID, ids[1].ID, ids[2].ID
	chDone, chDead, chCancelled := waitAsync(t, e, done), waitAsync(t, e, dead), waitAsync(t, e, cancelled)

	ls := e.claim(t, "w1", 3)
	for _, l := range ls {
		switch l.ID {
		case done:
			if err := e.q.Complete(e.ctx, l); err != nil {
				t.Fatal(err)
			}
		case dead:
			if err := e.q.DeadLetter(e.ctx, l, "broken for good"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.q.Cancel(e.ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	if o := got(t, chDone); o.Kind != quick.OutcomeCompleted || o.Attempts != 1 || !o.FinishedAt.Equal(epoch) {
		t.Errorf("completed: %+v", o)
	}
	if o := got(t, chDead); o.Kind != quick.OutcomeDeadLettered || o.Error != "broken for good" {
		t.Errorf("dead-lettered: %+v", o)
	}
	if o := got(t, chCancelled); o.Kind != quick.OutcomeCancelled {
		t.Errorf("cancelled: %+v", o)
	}
	// Afterwards Wait and Outcome answer at once.
	if o, err := e.q.Wait(e.ctx, done); err != nil || o.Kind != quick.OutcomeCompleted {
		t.Errorf("wait after: %+v %v", o, err)
	}
	if o, err := e.q.Outcome(e.ctx, cancelled); err != nil || o.Kind != quick.OutcomeCancelled {
		t.Errorf("outcome after: %+v %v", o, err)
	}

	// A requeued dead letter is pending again; its next outcome replaces
	// the old one.
	if err := e.q.Requeue(e.ctx, dead); err != nil {
		t.Fatal(err)
	}
	if o, err := e.q.Outcome(e.ctx, dead); err != nil || o.Kind != quick.OutcomePending {
		t.Fatalf("requeued: %+v %v", o, err)
	}
	ch := waitAsync(t, e, dead)
	ls = e.claim(t, "w1", 1)
	if err := e.q.Complete(e.ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	if o := got(t, ch); o.Kind != quick.OutcomeCompleted {
		t.Errorf("requeued then completed: %+v", o)
	}
}

// TestWaitNotWaitable: jobs enqueued without the option cost nothing more
// and cannot be waited on; a finished one is "finished", not a guess.
func TestWaitNotWaitable(t *testing.T) {
	t.Skip("TODO(issue 21, surfaces): Wait on a pending job (lookup) reads schema 1 until the surfaces branch lands")
	e := newEnv(t, quick.Options{WaitableTypes: []string{"history"}})
	plain := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	if _, err := e.q.Wait(e.ctx, plain); !errors.Is(err, quick.ErrNotWaitable) {
		t.Fatalf("plain: %v, want ErrNotWaitable", err)
	}
	before := e.db.Stats()
	ls := e.claim(t, "w1", 1)
	if err := e.q.Complete(e.ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	plainCost := e.db.Stats().Sub(before)
	if o, err := e.q.Wait(e.ctx, plain); err != nil || o.Kind != quick.OutcomeFinished {
		t.Errorf("finished plain job: %+v %v", o, err)
	}
	if _, err := e.q.Wait(e.ctx, quick.NewID(epoch)); !errors.Is(err, quick.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}

	// A type listed in WaitableTypes: every job is waitable, and its
	// completion costs exactly one more mutation.
	hist := e.enqueue(t, quick.NewJob{TaskType: "history"})[0].ID
	before = e.db.Stats()
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "history", Holder: "w1", Max: 1, Lease: time.Minute})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %v", err)
	}
	ls = res.Jobs
	if err := e.q.Complete(e.ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	histCost := e.db.Stats().Sub(before)
	if histCost.Mutations != plainCost.Mutations+1 || histCost.Commits != plainCost.Commits || histCost.Reads != plainCost.Reads {
		t.Errorf("waitable completion: %+v; plain: %+v; want one more mutation, nothing else", histCost, plainCost)
	}
	if o, err := e.q.Outcome(e.ctx, hist); err != nil || o.Kind != quick.OutcomeCompleted {
		t.Errorf("history: %+v %v", o, err)
	}

	// Outcomes expire OutcomeRetention after the job's creation.
	e.clk.Advance(25 * time.Hour)
	if err := e.q.PurgeOutcomes(e.ctx); err != nil {
		t.Fatal(err)
	}
	if o, err := e.q.Outcome(e.ctx, hist); err == nil && o.Kind != quick.OutcomeFinished {
		t.Errorf("after purge: %+v", o)
	}
}

func TestWaitContext(t *testing.T) {
	e := newEnv(t, quick.Options{})
	id := e.enqueue(t, quick.NewJob{TaskType: "email", Waitable: true})[0].ID
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.q.Wait(ctx, id); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}
