package cron

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// handleOnly registers the cron handler on a worker that never runs, so
// that e.q's claims run the dead-letter hook Handle installs.
func (e *env) handleOnly() {
	e.t.Helper()
	w, err := worker.New(worker.Config{Queue: e.q, ID: "idle", Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := Handle(w, "tick", func(context.Context, Occurrence) error { return nil }, worker.HandlerOptions{Lease: 10 * time.Second}); err != nil {
		e.t.Fatal(err)
	}
}

// TestClaimThatDeadLettersEnqueuesTheSuccessor: an occurrence whose only
// attempt was spent by a holder that vanished is dead-lettered by the next
// claim, and that claim's transaction enqueues the successor. Before the
// hook the chain broke until a repair.
func TestClaimThatDeadLettersEnqueuesTheSuccessor(t *testing.T) {
	e := newEnv(t, nil)
	e.handleOnly()
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.clk.Set(epoch.Add(time.Minute))
	if ls := e.claim("tick", "ghost"); len(ls) != 1 { // and the ghost vanishes
		t.Fatalf("claimed %d", len(ls))
	}
	e.clk.Advance(11 * time.Second)
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "tick", Holder: "w2", Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.DeadLettered != 1 || len(res.Jobs) != 0 {
		t.Fatalf("claim: %+v, want the exhausted occurrence dead-lettered", res)
	}
	x := e.entry("tick")
	if !x.Alive || !x.Next.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("after the claim dead-lettered the occurrence: %+v, want the next at %v", x, epoch.Add(2*time.Minute))
	}
}

// armedDB fails, once armed, the next commit of a transaction that wrote
// and read the key target (the schedule's definition: only the
// transaction that ends an occurrence and enqueues its successor does
// both), with err; if during is set it runs inside that commit, before it
// fails.
type armedDB struct {
	kv.Database
	armed  atomic.Bool
	target []byte
	err    error
	during func()
}

func (d *armedDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &armedTx{Transaction: tr, db: d}, nil
}

func (d *armedDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *armedDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

type armedTx struct {
	kv.Transaction
	db     *armedDB
	writes bool
	read   bool // read db.target
}

func (t *armedTx) Get(k []byte) kv.Future[[]byte] {
	if bytes.Equal(k, t.db.target) {
		t.read = true
	}
	return t.Transaction.Get(k)
}

func (t *armedTx) Set(k, v []byte) { t.writes = true; t.Transaction.Set(k, v) }
func (t *armedTx) Clear(k []byte)  { t.writes = true; t.Transaction.Clear(k) }
func (t *armedTx) Add(k, p []byte) { t.writes = true; t.Transaction.Add(k, p) }
func (t *armedTx) OnError(err error) error {
	t.writes, t.read = false, false
	return t.Transaction.OnError(err)
}

func (t *armedTx) Commit() error {
	if t.writes && t.read && t.db.armed.CompareAndSwap(true, false) {
		if t.db.during != nil {
			t.db.during()
		}
		return t.db.err
	}
	return t.Transaction.Commit()
}

// failingWorker runs a worker whose "tick" handler always fails and arms
// db just before returning, so that the transaction that dead-letters the
// occurrence fails.
func failingWorker(e *env, db *armedDB) *atomic.Int64 {
	db.target = defKey(e.q, "tick")
	var runs atomic.Int64
	e.startWorker(func(context.Context, Occurrence) error {
		if runs.Add(1) == 1 {
			db.armed.Store(true)
		}
		return errBoom
	})
	return &runs
}

// TestFailedDeadLetterKeepsTheChain: the transaction that dead-letters an
// occurrence on its last attempt, with its successor, fails. Before the
// fix the handler's error went to the worker, whose failure ack
// dead-lettered the occurrence with no successor. Now the occurrence runs
// again, and its second dead-lettering carries the successor.
func TestFailedDeadLetterKeepsTheChain(t *testing.T) {
	var db *armedDB
	e := newEnv(t, func(inner kv.Database) kv.Database {
		db = &armedDB{Database: inner, err: kv.ErrTransactionTooLarge}
		return db
	})
	runs := failingWorker(e, db)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.clk.Set(epoch.Add(time.Minute))
	d := &clockDriver{t: t, e: e}
	d.until("the occurrence to be dead-lettered", func() bool {
		n, err := e.q.DeadCount(e.ctx, "tick")
		return err == nil && n == 1
	})
	if x := e.entry("tick"); !x.Alive {
		t.Fatalf("the occurrence was dead-lettered with no successor after its dead-lettering failed once: %+v", x)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the failed dead-lettering runs it again)", n)
	}
}

// TestLeaseLapsesBetweenDeadLetterRetries: the dead-lettering transaction
// ends in 1021 without applying; before its retry the lease lapses and a
// claim dead-letters the exhausted occurrence. The retry finds the lease
// gone and the job dead, and (package worker's reached) takes that
// dead-letter for its own. The chain must still go on: the claim's
// dead-letter carried the successor.
func TestLeaseLapsesBetweenDeadLetterRetries(t *testing.T) {
	var db *armedDB
	e := newEnv(t, func(inner kv.Database) kv.Database {
		db = &armedDB{Database: inner, err: kv.ErrCommitUnknownResult}
		return db
	})
	claimErr := make(chan error, 1)
	var once sync.Once
	db.during = func() {
		once.Do(func() {
			e.clk.Advance(31 * time.Second) // past the worker's 30 s lease
			// This claim or the worker's own (woken by the clock) finds the
			// occurrence exhausted and dead-letters it.
			_, err := e.q.Consumer().Claim(context.Background(), quick.ClaimOptions{TaskType: "tick", Holder: "other", Lease: 10 * time.Second})
			if err == nil {
				var n int64
				if n, err = e.q.DeadCount(context.Background(), "tick"); err == nil && n != 1 {
					err = fmt.Errorf("%d dead letters after the claim, want the exhausted occurrence", n)
				}
			}
			claimErr <- err
		})
	}
	failingWorker(e, db)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.clk.Set(epoch.Add(time.Minute))
	d := &clockDriver{t: t, e: e}
	d.until("the occurrence to be dead-lettered", func() bool {
		n, err := e.q.DeadCount(e.ctx, "tick")
		return err == nil && n == 1
	})
	select {
	case err := <-claimErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the dead-lettering transaction never failed with 1021")
	}
	x := e.entry("tick")
	if !x.Alive || !x.Next.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("after the lapse: %+v, want the next occurrence at %v", x, epoch.Add(2*time.Minute))
	}
	if js := e.jobs("tick"); len(js) != 1 {
		t.Fatalf("%d occurrences pending, want 1: %+v", len(js), js)
	}
}

// TestFailedCompletionKeepsTheChain: the transaction that completes an
// occurrence on its only attempt, with its successor, is struck by its
// timeout while the commit is in flight and does not apply (1031 with
// DuringCommit: FDB retries no 1031). Before the fix the error went to the
// worker, whose failure ack dead-lettered the occurrence (its last attempt)
// with no successor: the soak's broken chain-0. Now the worker finishes in a
// fresh transaction, which still holds the lease, so the completion and its
// successor commit once without running the handler again (cron's own
// fallback, a snooze that reruns the occurrence, remains for completions
// that cannot finish at all).
func TestFailedCompletionKeepsTheChain(t *testing.T) {
	var db *armedDB
	e := newEnv(t, func(inner kv.Database) kv.Database {
		db = &armedDB{Database: inner, err: kv.Error{Code: 1031, DuringCommit: true}}
		return db
	})
	db.target = defKey(e.q, "tick")
	var runs atomic.Int64
	e.startWorker(func(context.Context, Occurrence) error {
		if runs.Add(1) == 1 {
			db.armed.Store(true)
		}
		return nil
	})
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.clk.Set(epoch.Add(time.Minute))
	d := &clockDriver{t: t, e: e}
	d.until("the occurrence to be completed or dead-lettered", func() bool {
		if n, err := e.q.DeadCount(e.ctx, "tick"); err == nil && n > 0 {
			return true
		}
		es, err := List(e.ctx, e.q)
		return err == nil && len(es) == 1 && es[0].Next.Equal(epoch.Add(2*time.Minute))
	})
	if n, err := e.q.DeadCount(e.ctx, "tick"); err != nil || n != 0 {
		t.Fatalf("%d dead letters (%v): the occurrence whose completion failed was dead-lettered", n, err)
	}
	x := e.entry("tick")
	if !x.Alive || !x.Next.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("after the failed completion: %+v, want the next occurrence at %v", x, epoch.Add(2*time.Minute))
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1 (the completion finishes in a fresh transaction)", n)
	}
	if db.armed.Load() {
		t.Fatal("the fault never struck the completion")
	}
}

// TestFailedOwnWritesOnLastAttemptKeepTheChain: a TxHandler whose own
// writes fail (not the database) failed its run: on the last attempt the
// occurrence is dead-lettered with its successor, not snoozed forever.
func TestFailedOwnWritesOnLastAttemptKeepTheChain(t *testing.T) {
	e := newEnv(t, nil)
	w, err := worker.New(worker.Config{Queue: e.q, ID: "w", Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	if err := HandleTx(w, "tick", func(context.Context, Occurrence) (func(kv.Transaction) error, error) {
		runs.Add(1)
		return func(kv.Transaction) error { return errBoom }, nil
	}, worker.HandlerOptions{Lease: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	t.Cleanup(func() { testhooks.KillWorker(w); <-done })
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.clk.Set(epoch.Add(time.Minute))
	d := &clockDriver{t: t, e: e}
	d.until("the occurrence to be dead-lettered", func() bool {
		n, err := e.q.DeadCount(e.ctx, "tick")
		return err == nil && n == 1
	})
	x := e.entry("tick")
	if !x.Alive || !x.Next.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("after its own writes failed on the last attempt: %+v, want the next occurrence at %v", x, epoch.Add(2*time.Minute))
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}
