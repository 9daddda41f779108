package cron

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// env is a queue on the test database with a fake clock, its database
// wrapped in counters (and, for some tests, faults).
type env struct {
	t   testing.TB
	q   *quick.Queue
	clk *clock.Fake
	db  *kv.CountedDB
	ctx context.Context
}

func newEnv(t testing.TB, wrap func(kv.Database) kv.Database) *env {
	t.Helper()
	raw, space := fdbtest.Open(t)
	return newEnvOn(t, raw, space, clock.NewFake(epoch), wrap)
}

// newClockedEnv is newEnv on a private memkv database whose engine clock is
// the test's fake clock, for tests that run workers (as package worker's
// tests do). Workers compare their clocks through read versions
// (lanes/skew.go); on a database whose versions follow real time, a fake
// clock jumped a minute while workers join reads as a worker a minute off,
// which stands by until its next heartbeat. Here versions advance with the
// fake clock, as a cluster's advance with real time, so every worker's
// clock agrees with the others' whenever it joins and however long the
// machine takes between the test's steps.
//
// The MVCC window is widened past any jump the tests make: with the
// default 5 s, every transaction in flight when the test jumps the clock
// would fail with transaction_too_old, which is not what they test.
func newClockedEnv(t testing.TB, wrap func(kv.Database) kv.Database) *env {
	t.Helper()
	clk := clock.NewFake(epoch)
	raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk, MVCCWindow: 24 * time.Hour})
	return newEnvOn(t, raw, space, clk, wrap)
}

func newEnvOn(t testing.TB, raw kv.Database, space tuple.Subspace, clk *clock.Fake, wrap func(kv.Database) kv.Database) *env {
	t.Helper()
	var db kv.Database = raw
	if wrap != nil {
		db = wrap(db)
	}
	counted := kv.WithCounters(db)
	q, err := quick.Open(context.Background(), counted, space, quick.Options{
		Clock: clk, Logger: quietLogger(),
		Backoff: func(int) time.Duration { return 10 * time.Second },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, q: q, clk: clk, db: counted, ctx: context.Background()}
}

func (e *env) register(s Schedule) {
	e.t.Helper()
	if err := Register(e.ctx, e.q, s); err != nil {
		e.t.Fatal(err)
	}
}

// jobs lists the task type's pending and running jobs (quick's listing
// for quicktest: every zone of the type, through its pointer index).
func (e *env) jobs(taskType string) []quick.JobInfo {
	e.t.Helper()
	list := testhook.JobsTx.(func(kv.ReadTransaction, *quick.Queue, string, int) ([]quick.JobInfo, bool, error))
	var js []quick.JobInfo
	err := e.q.DB().ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		js, _, err = list(tr, e.q, taskType, 1000)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return js
}

// pending returns the one pending or running job of the task type and its
// envelope, failing unless there is exactly one.
func (e *env) pending(taskType string) (quick.JobInfo, envelope) {
	e.t.Helper()
	js := e.jobs(taskType)
	if len(js) != 1 {
		e.t.Fatalf("%d pending or running %s jobs, want 1: %+v", len(js), taskType, js)
	}
	info, err := e.q.Get(e.ctx, js[0].ID)
	if err != nil {
		e.t.Fatal(err)
	}
	env, err := unmarshalEnvelope(info.Payload)
	if err != nil {
		e.t.Fatal(err)
	}
	return info, env
}

func (e *env) entry(name string) Entry {
	e.t.Helper()
	es, err := List(e.ctx, e.q)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range es {
		if x.Name == name {
			return x
		}
	}
	e.t.Fatalf("no schedule %q in %+v", name, es)
	return Entry{}
}

func (e *env) claim(taskType, holder string) []quick.Lease {
	e.t.Helper()
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: taskType, Holder: holder, Max: 100, Lease: 10 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Jobs
}

// finish ends a leased occurrence as package worker's CompleteWith and
// DeadLetterWith do, but completing before scheduling: the ack and
// completeTx in one transaction, a retry after an unknown commit that finds
// the lease gone checking whether it was its own commit. extra runs in the
// same transaction, after both.
func (e *env) finish(l quick.Lease, kind quick.AckKind, reason string, extra func(kv.Transaction) error) error {
	tr, err := e.q.DB().CreateTransaction()
	if err != nil {
		return err
	}
	cw := txn.WatchCommits(tr)
	var lost error
	err = kv.Retry(e.ctx, cw, func(tr kv.Transaction) error {
		lost = nil
		res, err := e.q.AckTx(tr, quick.Ack{Lease: l, Kind: kind, Error: reason})
		if len(res) == 0 {
			return err
		}
		if lost = res[0].Err; lost != nil {
			return lost
		}
		if _, err := completeTx(tr, e.q, l.Payload, l.ID); err != nil && !isBadDefinition(err) {
			return err
		}
		if extra != nil {
			return extra(tr)
		}
		return nil
	})
	if err != nil && lost != nil && cw.MaybeCommitted() {
		info, gerr := e.q.Get(e.ctx, l.ID)
		if (kind == quick.AckComplete && (quick.IsNotFound(gerr) || (gerr == nil && info.State == quick.StateFinished))) ||
			(kind == quick.AckDeadLetter && gerr == nil && info.State == quick.StateDead) {
			return nil
		}
	}
	return err
}

// runDue claims the task type's vested occurrences and runs h on each,
// ending each as Handle does: success completes it and schedules the next;
// failure retries it, or on its last attempt dead-letters it and schedules
// the next. It returns the occurrences run.
func (e *env) runDue(taskType, holder string, h func(Occurrence) error) []Occurrence {
	e.t.Helper()
	var ran []Occurrence
	for _, l := range e.claim(taskType, holder) {
		env, err := unmarshalEnvelope(l.Payload)
		if err != nil {
			e.t.Fatal(err)
		}
		occ := Occurrence{Name: env.Name, ScheduledAt: env.ScheduledAt, Payload: env.Payload, Attempt: l.Attempt, JobID: l.ID}
		ran = append(ran, occ)
		herr := h(occ)
		switch {
		case herr == nil:
			err = e.finish(l, quick.AckComplete, "", nil)
		case l.Attempt >= l.MaxAttempts:
			err = e.finish(l, quick.AckDeadLetter, herr.Error(), nil)
		default:
			err = e.q.Fail(e.ctx, l, herr.Error())
		}
		if err != nil {
			e.t.Fatalf("ending %s (%v): %v", l.ID, occ.ScheduledAt, err)
		}
	}
	return ran
}

func ok(Occurrence) error { return nil }

var errBoom = errors.New("boom")
