package quick_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// stale returns a lease that another holder has since taken over.
func stale(t *testing.T, e *env) quick.Lease {
	t.Helper()
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	old := e.claim(t, "a", 1)[0]
	e.clk.Advance(2 * time.Minute)
	if got := e.claim(t, "b", 1); len(got) != 1 {
		t.Fatal("the lapsed job was not claimed again")
	}
	return old
}

// The single-lease forms return a lost lease as their error.
func TestSingleLeaseFormsReturnLostLease(t *testing.T) {
	e := newEnv(t, quick.Options{})
	old := stale(t, e)
	ops := map[string]func(tr kv.Transaction) error{
		"CompleteTx":   func(tr kv.Transaction) error { return e.q.CompleteTx(tr, old) },
		"FailTx":       func(tr kv.Transaction) error { return e.q.FailTx(tr, old, "x") },
		"SnoozeTx":     func(tr kv.Transaction) error { return e.q.SnoozeTx(tr, old, time.Minute) },
		"DeadLetterTx": func(tr kv.Transaction) error { return e.q.DeadLetterTx(tr, old, "x") },
	}
	for name, op := range ops {
		err := e.db.Transact(e.ctx, op)
		var lost *quick.LeaseLostError
		if !errors.As(err, &lost) || !errors.Is(err, quick.ErrLeaseLost) {
			t.Errorf("%s on a lost lease: %v, want a *LeaseLostError", name, err)
		}
	}
	if err := e.q.Fail(e.ctx, old, "x"); !errors.Is(err, quick.ErrLeaseLost) {
		t.Errorf("Fail on a lost lease: %v, want ErrLeaseLost", err)
	}
}

// A batch reports its lost leases in its error too, with every result.
func TestAckErrorJoinsLostLeases(t *testing.T) {
	e := newEnv(t, quick.Options{})
	old := stale(t, e)
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	fresh := e.claim(t, "c", 1)[0]
	res, err := e.q.Ack(e.ctx, quick.Ack{Lease: fresh, Kind: quick.AckComplete}, quick.Ack{Lease: old, Kind: quick.AckComplete})
	if len(res) != 2 || res[0].Err != nil || !quick.IsLeaseLost(res[1].Err) {
		t.Fatalf("results %+v", res)
	}
	var lost *quick.LeaseLostError
	if !errors.As(err, &lost) {
		t.Fatalf("Ack with a lost lease: err %v, want one joining a *LeaseLostError", err)
	}
	if info, err := e.q.Get(e.ctx, fresh.ID); !finished(info, err) {
		t.Fatalf("the held lease's ack did not apply: %+v %v", info, err)
	}
	// Without a lost lease the error is nil.
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	l := e.claim(t, "c", 1)[0]
	if _, err := e.q.Ack(e.ctx, quick.Ack{Lease: l, Kind: quick.AckComplete}); err != nil {
		t.Fatal(err)
	}
}
