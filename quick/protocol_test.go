package quick_test

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// The lease token is the only thing that tells a lapsed holder's write
// from the current one's when the key comes back identical: A's lease
// lapses, B claims at exactly A's deadline and releases, which places the
// job at that same instant, in the same lane: A's very key. A must find
// its lease lost, and the job must stay.
func TestLeaseTokenTellsAnIdenticalKeyApart(t *testing.T) {
	e := newEnv(t, quick.Options{})
	id := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	a := e.claim(t, "A", 1)[0]
	e.clk.Set(a.Deadline) // exactly A's deadline: the job vests again
	b := e.claim(t, "B", 1)
	if len(b) != 1 {
		t.Fatalf("B claimed %d jobs at A's deadline", len(b))
	}
	if err := e.q.Release(e.ctx, b[0]); err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, id)
	if err != nil || !info.RunAt.Equal(a.Deadline) || info.Lane != a.Lane() {
		t.Fatalf("after B's release the job is %+v, %v; the test needs A's key back (%v, lane %d)", info, err, a.Deadline, a.Lane())
	}
	for name, op := range map[string]func() error{
		"complete": func() error { return e.q.Complete(e.ctx, a) },
		"extend":   func() error { _, err := e.q.Extend(e.ctx, a, time.Minute); return err },
		"ckpt":     func() error { _, err := e.q.Checkpoint(e.ctx, a, []byte("x"), time.Minute); return err },
		"fail":     func() error { return e.q.Fail(e.ctx, a, "x") },
	} {
		if err := op(); !quick.IsLeaseLost(err) {
			t.Errorf("%s under A's lapsed lease on B's identical key: %v, want lease lost", name, err)
		}
	}
	info, err = e.q.Get(e.ctx, id)
	if err != nil || info.State != quick.StateReady || info.Attempt != 1 {
		t.Fatalf("the job after A's stale writes: %+v, %v; want it ready, as B left it", info, err)
	}
}

// slipEnv runs a queue whose next commit first lets another client act:
// the interleaving where only conflict ranges keep two writers apart.
type slipEnv struct {
	q, other *quick.Queue
	clk      *clock.Fake
	ctx      context.Context
	slip     func()
}

func newSlipEnv(t testing.TB) *slipEnv {
	t.Helper()
	raw, space := fdbtest.Open(t)
	e := &slipEnv{clk: clock.NewFake(epoch), ctx: context.Background()}
	db := &hookDB{Database: raw, before: func(kv.Transaction) {
		if f := e.slip; f != nil {
			e.slip = nil
			f()
		}
	}}
	opts := quick.Options{Clock: e.clk}
	var err error
	if e.q, err = quick.Open(e.ctx, db, space, opts); err != nil {
		t.Fatal(err)
	}
	if e.other, err = quick.Open(e.ctx, raw, space, opts); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *slipEnv) claim(t testing.TB, q *quick.Queue, holder string) []quick.Lease {
	t.Helper()
	res, err := q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: holder, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

// Two claims of one job conflict: B claims between A's scan and A's
// commit, so A's commit fails on the read-conflict range of the key it
// moves, and its retry finds nothing. Without it both would hold a live
// lease.
func TestConcurrentClaimsOfOneJobConflict(t *testing.T) {
	e := newSlipEnv(t)
	id := enqueueOn(t, e.other, quick.NewJob{TaskType: "email"})
	var b []quick.Lease
	e.slip = func() { b = e.claim(t, e.other, "B") }
	a := e.claim(t, e.q, "A")
	if len(b) != 1 || len(a) != 0 {
		t.Fatalf("A took %d and B took %d of one job; want only B", len(a), len(b))
	}
	info, err := e.other.Get(e.ctx, id)
	if err != nil || info.Holder != "B" {
		t.Fatalf("the job is %+v, %v; want it held by B", info, err)
	}
	if err := e.other.Complete(e.ctx, b[0]); err != nil {
		t.Fatalf("B's complete: %v", err)
	}
}

// An ack conflicts with a claim that moves its key meanwhile: A's lapsed
// lease completes while B claims the job between A's read and A's commit.
// A must find its lease lost, and B's job must stay whole.
func TestAckConflictsWithAClaimThatMovesItsKey(t *testing.T) {
	e := newSlipEnv(t)
	id := enqueueOn(t, e.other, quick.NewJob{TaskType: "email", Payload: []byte("p")})
	a := e.claim(t, e.other, "A")[0]
	e.clk.Advance(2 * time.Minute) // A's lease lapsed; nobody took it yet
	var b []quick.Lease
	e.slip = func() { b = e.claim(t, e.other, "B") }
	if err := e.q.Complete(e.ctx, a); !quick.IsLeaseLost(err) {
		t.Fatalf("A's complete raced by B's claim: %v, want lease lost", err)
	}
	if len(b) != 1 {
		t.Fatalf("B claimed %d", len(b))
	}
	info, err := e.other.Get(e.ctx, id)
	if err != nil || info.Holder != "B" || string(info.Payload) != "p" {
		t.Fatalf("B's job after A's complete: %+v, %v", info, err)
	}
	if err := e.other.Complete(e.ctx, b[0]); err != nil {
		t.Fatalf("B's complete: %v", err)
	}
}

func enqueueOn(t testing.TB, q *quick.Queue, j quick.NewJob) quick.ID {
	t.Helper()
	res, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}
