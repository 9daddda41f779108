package quick_test

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// faultEnv is a queue over a database that injects faults, beside a queue
// over the same data without them, for reading the truth.
type faultEnv struct {
	q, truth *quick.Queue
	faulty   *kv.FaultyDB
	clk      *clock.Fake
	ctx      context.Context
	raw      kv.Database
	space    tuple.Subspace
	opts     quick.Options
}

func newFaultEnv(t testing.TB, f kv.Faults, opts quick.Options) *faultEnv {
	t.Helper()
	raw, space := fdbtest.Open(t)
	faulty := kv.WithFaults(raw, f)
	clk := clock.NewFake(epoch)
	opts.Clock = clk
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
	}
	ctx := context.Background()
	truth, err := quick.Open(ctx, raw, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	q, err := quick.Open(ctx, faulty, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &faultEnv{q: q, truth: truth, faulty: faulty, clk: clk, ctx: ctx, raw: raw, space: space, opts: opts}
}

func (e *faultEnv) claimTruth(t testing.TB) quick.Lease {
	t.Helper()
	res, err := e.truth.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	return res.Jobs[0]
}

// commitFaults are the faults after which a commit applied but its
// outcome was reported unknown: each operation must find its own commit.
var commitFaults = map[string]kv.Faults{
	"1021":           {UnknownCommitted: 1},
	"1031-in-commit": {TimedOutCommitted: 1},
	"1025-in-commit": {CancelledCommitted: 1},
}

// Every operation recognises its own commit after a fault that applied it
// and reported it unknown (1021, or its own timeout or a cancellation that
// struck the commit in flight), instead of failing or reporting a lost lease.
func TestEveryOperationRecognisesItsOwnCommit(t *testing.T) {
	for name, f := range commitFaults {
		t.Run(name, func(t *testing.T) {
			t.Run("claim", func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{})
				id := enqueueTruth(t, e, quick.NewJob{TaskType: "email", MaxAttempts: 1})
				res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute, Timeout: time.Second})
				if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != id {
					t.Fatalf("claim = %+v, %v; want the job, leased once", res, err)
				}
				// The lease it returned is the one stored: it completes.
				if err := e.truth.Complete(e.ctx, res.Jobs[0]); err != nil {
					t.Fatalf("complete under the returned lease: %v", err)
				}
				if n := e.faulty.Stats().Total(); n == 0 {
					t.Fatal("no fault injected")
				}
			})
			t.Run("extend", func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{})
				enqueueTruth(t, e, quick.NewJob{TaskType: "email"})
				l := e.claimTruth(t)
				e.clk.Advance(time.Second)
				l2, err := e.q.Extend(e.ctx, l, time.Minute)
				if err != nil || !l2.Deadline.Equal(epoch.Add(time.Second+time.Minute)) {
					t.Fatalf("extend = %v, %v", l2.Deadline, err)
				}
				if err := e.truth.Complete(e.ctx, l2); err != nil {
					t.Fatalf("complete under the extended lease: %v", err)
				}
			})
			t.Run("checkpoint", func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{})
				enqueueTruth(t, e, quick.NewJob{TaskType: "email"})
				l := e.claimTruth(t)
				e.clk.Advance(time.Second) // a new deadline: the key moves
				l2, err := e.q.Checkpoint(e.ctx, l, []byte("half"), time.Minute)
				if err != nil {
					t.Fatalf("checkpoint: %v", err)
				}
				if err := e.truth.Complete(e.ctx, l2); err != nil {
					t.Fatalf("complete under the checkpointed lease: %v", err)
				}
			})
			for _, kind := range []quick.AckKind{quick.AckComplete, quick.AckFail, quick.AckSnooze, quick.AckRelease, quick.AckDeadLetter} {
				t.Run(kind.String(), func(t *testing.T) {
					e := newFaultEnv(t, f, quick.Options{})
					id := enqueueTruth(t, e, quick.NewJob{TaskType: "email", MaxAttempts: 3})
					l := e.claimTruth(t)
					res, err := e.q.Ack(e.ctx, quick.Ack{Lease: l, Kind: kind, Error: "boom", Delay: time.Minute})
					if err != nil || res[0].Err != nil {
						t.Fatalf("%s = %+v, %v", kind, res, err)
					}
					info, err := e.truth.Get(e.ctx, id)
					want := map[quick.AckKind]quick.State{quick.AckComplete: quick.StateFinished, quick.AckFail: quick.StateScheduled,
						quick.AckSnooze: quick.StateScheduled, quick.AckRelease: quick.StateReady, quick.AckDeadLetter: quick.StateDead}[kind]
					if kind == quick.AckComplete && finished(info, err) {
						return
					}
					if err != nil || info.State != want {
						t.Fatalf("after %s the job is %v (%v), want %v", kind, info.State, err, want)
					}
				})
			}
			t.Run("requeue", func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{})
				id := enqueueTruth(t, e, quick.NewJob{TaskType: "email"})
				if err := e.truth.DeadLetter(e.ctx, e.claimTruth(t), "poison"); err != nil {
					t.Fatal(err)
				}
				if err := e.q.Requeue(e.ctx, id); err != nil {
					t.Fatalf("requeue: %v", err)
				}
				if info, err := e.truth.Get(e.ctx, id); err != nil || info.State != quick.StateReady {
					t.Fatalf("after requeue: %+v, %v", info, err)
				}
			})
			t.Run("cancel", func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{})
				id := enqueueTruth(t, e, quick.NewJob{TaskType: "email"})
				e.claimTruth(t)
				if err := e.q.Cancel(e.ctx, id); err != nil {
					t.Fatalf("cancel: %v", err)
				}
			})
		})
	}
}

// A claim whose transaction timed out while its commit was in flight and
// that cannot find out what happened (its context ended) says so, and
// leaves no job leased with an attempt spent for a run that never started.
func TestClaimCutShortReleasesWhatItMayHaveTaken(t *testing.T) {
	for name, f := range commitFaults {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t, f, quick.Options{})
			id := enqueueTruth(t, e, quick.NewJob{TaskType: "email", MaxAttempts: 1})
			ctx, cancel := context.WithCancel(e.ctx)
			q := quickOverHook(t, e, func() { cancel() })
			_, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
			if !kv.IsMaybeCommitted(err) {
				t.Fatalf("claim cut short = %v, want a maybe-committed error", err)
			}
			info, err := e.truth.Get(e.ctx, id)
			if err != nil || info.State != quick.StateReady || info.Attempt != 0 {
				t.Fatalf("after the cut-short claim the job is %+v, %v; want ready with no attempt spent", info, err)
			}
		})
	}
}

func enqueueTruth(t testing.TB, e *faultEnv, j quick.NewJob) quick.ID {
	t.Helper()
	res, err := e.truth.Enqueue(e.ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

// quickOverHook opens the env's queue over its faulty database with after
// called once, after the first commit that carries writes.
func quickOverHook(t testing.TB, e *faultEnv, after func()) *quick.Queue {
	t.Helper()
	fired := true // not while opening
	db := &hookDB{Database: e.faulty, after: func() {
		if !fired {
			fired = true
			after()
		}
	}}
	q, err := quick.Open(e.ctx, db, e.space, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	fired = false
	return q
}

// hookDB runs hooks around every commit of its transactions: before lets a
// test slip another client's transaction between an attempt's reads and its
// commit; after lets it act once the commit's outcome is decided.
type hookDB struct {
	kv.Database
	before func(kv.Transaction)
	after  func()
}

func (d *hookDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &hookTx{Transaction: tr, db: d}, nil
}

func (d *hookDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *hookDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

type hookTx struct {
	kv.Transaction
	db *hookDB
}

func (t *hookTx) Commit() error {
	if t.db.before != nil {
		t.db.before(t.Transaction)
	}
	err := t.Transaction.Commit()
	if t.db.after != nil {
		t.db.after()
	}
	return err
}

// A renewal whose context ended while its commit was in flight returns a
// maybe-committed error, and the holder keeps its old lease value. The
// renewal applied; the old value no longer names the job's key, so the
// holder's next renewal reports its lease lost (the worker then stops the
// run, and the job runs again once the applied renewal lapses) and changes
// nothing: the job stays leased where the renewal put it.
func TestRenewalWithUnknownOutcomeKeepsTheLease(t *testing.T) {
	for name, f := range commitFaults {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t, f, quick.Options{})
			id := enqueueTruth(t, e, quick.NewJob{TaskType: "email"})
			l := e.claimTruth(t)
			e.clk.Advance(10 * time.Second)
			ctx, cancel := context.WithCancel(e.ctx)
			q := quickOverHook(t, e, cancel)
			if _, err := q.Extend(ctx, l, time.Minute); !kv.IsMaybeCommitted(err) {
				t.Fatalf("extend cut short = %v, want maybe-committed", err)
			}
			info, err := e.truth.Get(e.ctx, id)
			if err != nil || !info.RunAt.Equal(epoch.Add(70*time.Second)) {
				t.Fatalf("the extension did not apply: %+v, %v", info, err)
			}
			// The holder still has l, the lease before the extension.
			e.clk.Advance(10 * time.Second)
			if _, err := e.truth.Extend(e.ctx, l, time.Minute); !quick.IsLeaseLost(err) {
				t.Fatalf("the next renewal with the old lease value: %v, want lease lost", err)
			}
			info, err = e.truth.Get(e.ctx, id)
			if err != nil || info.State != quick.StateLeased || !info.RunAt.Equal(epoch.Add(70*time.Second)) {
				t.Fatalf("after the refused renewal the job is %+v, %v; want leased until the applied renewal's deadline", info, err)
			}
		})
	}
}
