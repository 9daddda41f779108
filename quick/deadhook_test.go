package quick_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// TestDeadLetterHook: a claim that dead-letters an exhausted job runs the
// task type's hook once in its own transaction, with the job's payload and
// its unique key already free; the hook's writes commit with it; an error
// from the hook fails the claim and writes nothing.
func TestDeadLetterHook(t *testing.T) {
	e := newEnv(t, quick.Options{})
	mark := e.q.Root().Sub("test-hook").Pack(nil)
	hookErr := errors.New("hook failed")
	fail := true
	var seen []quick.DeadLettered
	e.q.OnDeadLetter("email", func(tr kv.Transaction, job quick.DeadLettered) error {
		if fail {
			return hookErr
		}
		seen = append(seen, job)
		tr.Set(mark, job.Payload)
		// The unique key is free: a job with the same one enqueues.
		_, err := e.q.EnqueueTx(tr, quick.NewJob{TaskType: "email", Payload: []byte("next"), UniqueKey: "u", RunAt: e.clk.Now().Add(time.Hour)})
		return err
	})
	e.enqueue(t, quick.NewJob{TaskType: "email", Payload: []byte("once"), MaxAttempts: 1, UniqueKey: "u"})
	if ls := e.claim(t, "ghost", 1); len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	e.clk.Advance(2 * time.Minute) // the ghost's lease lapses

	if _, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute}); !errors.Is(err, hookErr) {
		t.Fatalf("claim with a failing hook = %v, want its error", err)
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 0 {
		t.Fatalf("a claim whose hook failed dead-lettered %d", n)
	}

	fail = false
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
	if err != nil || res.DeadLettered != 1 || len(res.Jobs) != 0 {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	if len(seen) != 1 || string(seen[0].Payload) != "once" || seen[0].TaskType != "email" || seen[0].Reason == "" {
		t.Fatalf("hook saw %+v", seen)
	}
	var v []byte
	if err := e.q.DB().ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(mark).Get()
		return err
	}); err != nil || string(v) != "once" {
		t.Fatalf("the hook's write: %q, %v", v, err)
	}
	e.clk.Advance(time.Hour)
	if got := e.claim(t, "check", 10); len(got) != 1 || string(got[0].Payload) != "next" {
		t.Fatalf("the hook's enqueue: claimed %+v", got)
	}

	e.q.OnDeadLetter("email", nil) // removed: claims run nothing
}
