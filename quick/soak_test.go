package quick_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// Short-job mode under the faults the soak found it broken by
// (internal/soak, `quickbench soak -layout zones`).

// dropNextCommit fails the next commit once armed with 1021
// commit_unknown_result (or code, when set), not applied. For any other
// code than 1021 OnError answers the bare code, as FDB does for 1031 and
// 1025 (it retries neither).
type dropNextCommit struct {
	kv.Database
	armed atomic.Bool
	code  int
	// fired, when set, runs when the fault strikes.
	fired func()
}

func (d *dropNextCommit) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &dropTx{Transaction: tr, d: d}, nil
}

func (d *dropNextCommit) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type dropTx struct {
	kv.Transaction
	d *dropNextCommit
}

func (t *dropTx) Commit() error {
	if t.d.armed.CompareAndSwap(true, false) {
		t.Transaction.Cancel()
		if t.d.fired != nil {
			t.d.fired()
		}
		return kv.Error{Code: t.d.codeOr1021(), DuringCommit: true}
	}
	return t.Transaction.Commit()
}

func (t *dropTx) OnError(err error) error {
	if c := kv.Code(err); c != 1021 && c == t.d.code {
		return kv.Error{Code: c}
	}
	return t.Transaction.OnError(err)
}

func (d *dropNextCommit) codeOr1021() int {
	if d.code != 0 {
		return d.code
	}
	return 1021
}

func zshortQueue(t *testing.T) (*quick.Queue, *dropNextCommit, *clock.Fake) {
	t.Helper()
	raw, space := fdbtest.Open(t)
	db := &dropNextCommit{Database: raw}
	clk := clock.NewFake(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := quick.Open(context.Background(), db, space, quick.Options{
		Clock:     clk,
		TaskTypes: map[string]quick.TaskTypeOptions{"s": {ShortJobs: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return q, db, clk
}

func zshortClaim(t *testing.T, q *quick.Queue, holder string) quick.Claimed {
	t.Helper()
	res, err := q.Consumer().Claim(context.Background(), quick.ClaimOptions{
		TaskType: "s", Holder: holder, Max: 10, Lease: quick.MinLease,
		Keep: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestZoneShortClaimUnknownCommitNotTakenAsOwn: a short-mode claim whose
// commit failed with 1021 and did not apply must not take the attempt's
// hand-outs as its own on the retry. A short hand-out writes nothing to
// the job keys, so the keys look the same whether the attempt committed or
// not; before the fix the retry took them (Claim's recognition checked
// the job keys' tokens only), returned a lane lease that never committed,
// and the lane stayed free: a second worker leased it and ran the same job
// at the same time, at the same attempt (soak seed 1, `quickbench soak
// -layout zones -short`: "claimed twice at attempt 1 (tokens 0 by w005 ...
// and 0 by w006 ...)").
func TestZoneShortClaimUnknownCommitNotTakenAsOwn(t *testing.T) {
	q, db, _ := zshortQueue(t)
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "s", ItemSpace: "a", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	db.armed.Store(true)
	first := zshortClaim(t, q, "w1")
	if db.armed.Load() {
		t.Fatal("the fault was not injected")
	}
	if len(first.Jobs) != 1 || first.Lane == nil || !first.Lane.Short {
		t.Fatalf("w1's claim = %+v, want the job under a short lane lease", first)
	}
	second := zshortClaim(t, q, "w2")
	if len(second.Jobs) != 0 {
		t.Fatalf("w2 was handed out %s while w1 holds its lane: w1's lane lease never committed", second.Jobs[0].ID)
	}
	if err := q.Complete(ctx, first.Jobs[0]); err != nil {
		t.Fatalf("w1 completes its job: %v", err)
	}
}

// TestZoneShortHandOutEndsALapsedPerJobLease: a job promoted to a per-job
// lease (HandBack) whose holder then froze past it is handed out again in
// short-job mode; the frozen holder's late completion must fail. A short
// hand-out moves nothing, so before the fix the job key kept the lapsed
// lease's token and the late completion committed over the new run (soak:
// "a completion committed under stale token efd6e515df771bcd (attempt 1,
// w023); the last claim was token efd6e515df771bcd (attempt 2, w023)").
func TestZoneShortHandOutEndsALapsedPerJobLease(t *testing.T) {
	q, _, clk := zshortQueue(t)
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "s", ItemSpace: "a", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	first := zshortClaim(t, q, "w1")
	if len(first.Jobs) != 1 || first.Lane == nil {
		t.Fatalf("w1's claim = %+v", first)
	}
	promoted, err := q.Consumer().HandBack(ctx, *first.Lane, first.Jobs, quick.MinLease)
	if err != nil || len(promoted) != 1 || promoted[0].Short() {
		t.Fatalf("hand back = %+v, %v; want the job on a lease of its own", promoted, err)
	}
	clk.Advance(quick.MinLease + time.Second) // w1 froze past its lease
	again := zshortClaim(t, q, "w2")
	if len(again.Jobs) != 1 || again.Jobs[0].ID != promoted[0].ID || again.Jobs[0].Attempt != 2 {
		t.Fatalf("w2's claim = %+v, want the job again at attempt 2", again)
	}
	if err := q.Complete(ctx, promoted[0]); !quick.IsLeaseLost(err) {
		t.Fatalf("w1's late completion of the lapsed lease = %v, want its lease lost", err)
	}
	if err := q.Complete(ctx, again.Jobs[0]); err != nil {
		t.Fatalf("w2 completes the job: %v", err)
	}
}

// TestZoneShortContinuingClaimUnknownKeepsTheLane: a claim continuing on a
// short lane a worker holds (its jobs run under it) fails with its outcome
// unknown (1031 in flight, not applied, and the worker's context ends, as
// when it is stopped or killed). The lane is still the worker's;
// before the fix Claim's clean-up after an unknown outcome handed it
// back (ReleasePointer), and another worker leased it and ran the jobs
// still running under it again, at the same attempt (soak, `quickbench
// soak -layout migrate -short`, seed 1: a worker killed while its claim
// was in flight).
func TestZoneShortContinuingClaimUnknownKeepsTheLane(t *testing.T) {
	q, db, _ := zshortQueue(t)
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "s", ItemSpace: "a", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	first := zshortClaim(t, q, "w1")
	if len(first.Jobs) != 1 || first.Lane == nil {
		t.Fatalf("w1's claim = %+v", first)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	db.code, db.fired = 1031, cancel
	db.armed.Store(true)
	p := *first.Lane
	_, err := q.Consumer().Claim(cctx, quick.ClaimOptions{
		TaskType: "s", Holder: "w1", Max: 10, Lease: quick.MinLease,
		Lane: &p, Keep: true,
	})
	if !kv.IsMaybeCommitted(err) {
		t.Fatalf("continuing claim = %v, want its outcome unknown", err)
	}
	if second := zshortClaim(t, q, "w2"); len(second.Jobs) != 0 {
		t.Fatalf("w2 was handed out %s, which runs under w1's lane", second.Jobs[0].ID)
	}
	if err := q.Complete(ctx, first.Jobs[0]); err != nil {
		t.Fatalf("w1 completes its job: %v", err)
	}
}

// applyThenTimeout applies the next commit once armed, runs between (a
// concurrent writer's turn), then fails it with 1031 in flight, as FDB does
// when the transaction's timeout strikes a commit that applied.
type applyThenTimeout struct {
	kv.Database
	armed   atomic.Bool
	between func()
}

func (d *applyThenTimeout) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &attTx{Transaction: tr, d: d}, nil
}

func (d *applyThenTimeout) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type attTx struct {
	kv.Transaction
	d *applyThenTimeout
}

func (t *attTx) Commit() error {
	if !t.d.armed.CompareAndSwap(true, false) {
		return t.Transaction.Commit()
	}
	if err := t.Transaction.Commit(); err != nil {
		return err
	}
	t.d.between()
	return kv.Error{Code: 1031, DuringCommit: true}
}

func (t *attTx) OnError(err error) error {
	if kv.Code(err) == 1031 {
		return kv.Error{Code: 1031}
	}
	return t.Transaction.OnError(err)
}

// TestZoneEnqueueAutomaticIdempotencyTimeoutThenClaimed: with
// Options.AutomaticIdempotency an enqueue writes no marker, and a commit
// that applied but ended in 1031 is recognised on the retry by the keys it
// wrote. A worker that claims the job between the commit and the retry
// moves its key: the retry must still not enqueue the job a second time.
//
// It failed while the option replaced the marker: the retry could only look
// for the keys the attempt wrote, and a claim moved the job key (a
// completion would clear it), so the retry enqueued the job again. The
// marker now stays with the option.
func TestZoneEnqueueAutomaticIdempotencyTimeoutThenClaimed(t *testing.T) {
	raw, space := fdbtest.Open(t)
	tr, err := raw.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Options().(interface{ SetAutomaticIdempotency() error }); !ok {
		t.Skip("the kv engine has no automatic idempotency")
	}
	tr.Cancel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := quick.Options{Clock: clk, AutomaticIdempotency: true}
	db := &applyThenTimeout{Database: raw}
	q, err := quick.Open(ctx, db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	worker, err := quick.Open(ctx, raw, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(holder string) []quick.Lease {
		res, err := worker.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "e", Holder: holder, Max: 10, Lease: quick.MinLease})
		if err != nil {
			t.Fatal(err)
		}
		return res.Jobs
	}
	var first []quick.Lease
	db.between = func() { first = claim("w1") }
	db.armed.Store(true)
	res, err := q.Enqueue(ctx, quick.NewJob{TaskType: "e", ItemSpace: "a", Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].ID != res[0].ID {
		t.Fatalf("the claim between the commit and the retry took %+v", first)
	}
	if again := claim("w2"); len(again) != 0 {
		t.Fatalf("job %s was enqueued twice: claimed again while w1 holds it (attempt %d)", again[0].ID, again[0].Attempt)
	}
}
