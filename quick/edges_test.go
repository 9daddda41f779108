package quick_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// sizeEnv is a queue whose commits are measured: the largest transaction
// size (FDB's figure, GetApproximateSize) any commit carried.
type sizeEnv struct {
	*env
	largest int64
	raw     kv.Database
}

func newSizeEnv(t testing.TB, opts quick.Options) *sizeEnv {
	t.Helper()
	raw, space := fdbtest.Open(t)
	return newSizeEnvOn(t, raw, space, clock.NewFake(epoch), opts)
}

// newSizeEnvOn is newSizeEnv over a given database and clock.
func newSizeEnvOn(t testing.TB, raw kv.Database, space tuple.Subspace, clk *clock.Fake, opts quick.Options) *sizeEnv {
	t.Helper()
	e := &sizeEnv{raw: raw}
	db := &hookDB{Database: raw, before: func(tr kv.Transaction) {
		n, err := tr.GetApproximateSize().Get()
		if err == nil && n > e.largest {
			e.largest = n
		}
	}}
	counted := kv.WithCounters(db)
	opts.Clock = clk
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
	}
	ctx := context.Background()
	q, err := quick.Open(ctx, counted, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.env = &env{q: q, clk: clk, db: counted, ctx: ctx}
	return e
}

// transactionBudget is what every queue transaction must stay under: far
// below FDB's 10 MB limit.
const transactionBudget = 2 << 20

func largeJobs(n int, payload int, maxAttempts int) []quick.NewJob {
	var jobs []quick.NewJob
	for i := 0; i < n; i++ {
		jobs = append(jobs, quick.NewJob{TaskType: "email", Payload: bytes.Repeat([]byte{byte(i)}, payload), MaxAttempts: maxAttempts})
	}
	return jobs
}

// claimAll claims every vested job, in as many claims as it takes.
func (e *sizeEnv) claimAll(t testing.TB) []quick.Lease {
	t.Helper()
	var out []quick.Lease
	for i := 0; i < 100; i++ {
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1000, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Jobs...)
		if len(res.Jobs) == 0 && !res.More {
			return out
		}
	}
	t.Fatal("claims never ran dry")
	return nil
}

// Acks that rewrite large records are split by bytes: 130 failures of
// 89 kB jobs (11.6 MB of records) with 200 completions in one Ack call all
// apply, each transaction under the budget.
func TestAckSplitsLargeRewritesByBytes(t *testing.T) {
	e := newClockedSizeEnv(t, quick.Options{})
	e.enqueue(t, largeJobs(130, 89_000, 5)...)
	e.enqueue(t, largeJobs(200, 10, 5)...)
	leases := e.claimAll(t)
	if len(leases) != 330 {
		t.Fatalf("claimed %d jobs, want 330", len(leases))
	}
	var acks []quick.Ack
	for _, l := range leases {
		kind := quick.AckComplete
		if len(l.Payload) > 1000 {
			kind = quick.AckFail
		}
		acks = append(acks, quick.Ack{Lease: l, Kind: kind, Error: "smtp down"})
	}
	e.largest = 0
	res, err := e.q.Ack(e.ctx, acks...)
	if err != nil {
		t.Fatalf("ack of 130 large failures and 200 completions: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("ack %d: %v", i, r.Err)
		}
	}
	if e.largest > transactionBudget {
		t.Fatalf("an ack transaction carried %d bytes, over the %d budget", e.largest, transactionBudget)
	}
	// Shutdown's releases take the same path.
	e.clk.Advance(10 * time.Minute)
	leases = e.claimAll(t)
	var rel []quick.Ack
	for _, l := range leases {
		rel = append(rel, quick.Ack{Lease: l, Kind: quick.AckRelease})
	}
	e.largest = 0
	if res, err := e.q.Ack(e.ctx, rel...); err != nil || len(res) != 130 {
		t.Fatalf("release of 130 large jobs: %d results, %v", len(res), err)
	}
	if e.largest > transactionBudget {
		t.Fatalf("a release transaction carried %d bytes", e.largest)
	}
}

// A claim counts the records it rewrites when it dead-letters exhausted
// jobs: 200 exhausted 89 kB jobs are dead-lettered over several claims, each
// under the budget, instead of one claim failing with 2101 forever.
func TestClaimBoundsTheDeadLettersItWrites(t *testing.T) {
	e := newClockedSizeEnv(t, quick.Options{})
	e.enqueue(t, largeJobs(200, 89_000, 1)...)
	if got := len(e.claimAll(t)); got != 200 {
		t.Fatalf("claimed %d, want 200", got)
	}
	e.clk.Advance(2 * time.Minute) // every holder vanished on the last attempt
	e.largest = 0
	dead := 0
	for i := 0; i < 100; i++ {
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1000, Lease: time.Minute})
		if err != nil {
			t.Fatalf("claim %d over exhausted large jobs: %v", i, err)
		}
		dead += res.DeadLettered
		if !res.More {
			break
		}
	}
	if dead != 200 {
		t.Fatalf("dead-lettered %d, want 200", dead)
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 200 {
		t.Fatalf("dead count %d", n)
	}
	if e.largest > transactionBudget {
		t.Fatalf("a claim carried %d bytes, over the %d budget", e.largest, transactionBudget)
	}
}

func rawSet(t testing.TB, db kv.Database, key, value []byte) {
	t.Helper()
	if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(key, value)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

var garbage = []byte{0xff, 0xff, 0xff, 0x01}
