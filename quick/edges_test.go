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
		res, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1000, ScanLimit: 1000, Lease: time.Minute})
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
		res, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1000, ScanLimit: 1000, Lease: time.Minute})
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

func jobKey(q *quick.Queue, id quick.ID) []byte {
	return q.Root().Pack(tuple.Tuple{"j", tuple.UUID(id)})
}

func schedKey(q *quick.Queue, info quick.JobInfo) []byte {
	return q.Root().Pack(tuple.Tuple{"s", info.TaskType, int64(info.Lane), int64(info.Priority), info.RunAt.UnixMilli(), tuple.UUID(info.ID)})
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

// A record that does not decode costs the healthy job behind it nothing: a
// concurrency-1 claim takes the healthy job, and the corrupt one is
// quarantined as a dead letter an operator sees.
func TestCorruptRecordDoesNotCostAHealthyJobItsTurn(t *testing.T) {
	e := newSizeEnv(t, quick.Options{})
	bad := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	e.clk.Advance(time.Millisecond)
	good := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	rawSet(t, e.raw, jobKey(e.q, bad), garbage)
	res, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != good {
		t.Fatalf("claim behind a corrupt record = %+v, %v; want the healthy job", res, err)
	}
	info, err := e.q.Get(e.ctx, bad)
	if err != nil || info.State != quick.StateDead || info.LastError == "" {
		t.Fatalf("the corrupt job is %+v, %v; want a quarantined dead letter", info, err)
	}
	qs, err := e.q.ListQuarantined(e.ctx, 10)
	if err != nil || len(qs) != 1 || !bytes.Equal(qs[0].Value, garbage) {
		t.Fatalf("quarantine = %+v, %v; want the raw record", qs, err)
	}
	if err := e.q.Requeue(e.ctx, bad); err == nil {
		t.Fatal("a quarantined job without a payload was requeued")
	}
}

// Many schedule entries that do not decode (values, and keys that do not
// parse) never block the healthy job behind them: each claim quarantines
// what it read and says More, so a worker comes back at once.
func TestCorruptScheduleEntriesDoNotBlock(t *testing.T) {
	e := newSizeEnv(t, quick.Options{Lanes: 1})
	var ids []quick.ID
	for i := 0; i < 30; i++ {
		ids = append(ids, e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID)
		e.clk.Advance(time.Millisecond)
	}
	for _, id := range ids {
		info, err := e.q.Get(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rawSet(t, e.raw, schedKey(e.q, info), garbage)
	}
	for i := 0; i < 5; i++ {
		rawSet(t, e.raw, e.q.Root().Pack(tuple.Tuple{"s", "email", int64(0), int64(quick.High), "not-a-time", int64(i)}), []byte("x"))
	}
	good := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("the healthy job was never claimed")
		}
		res, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) == 1 {
			if res.Jobs[0].ID != good {
				t.Fatalf("claimed %s, want the healthy job", res.Jobs[0].ID)
			}
			break
		}
		if !res.More {
			t.Fatalf("claim %d took nothing and said no more, with the healthy job waiting", i)
		}
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 30 {
		t.Fatalf("dead count %d, want the 30 jobs with corrupt schedule values", n)
	}
	if n, _ := e.q.QuarantineCount(e.ctx); n != 5 {
		t.Fatalf("quarantine count %d, want the 5 keys that do not parse", n)
	}
}

// Get and Cancel of a running job cost a few point reads, whatever the
// backlog: no range read over lanes or the lease window.
func TestLookupByIDIsBoundedWhateverTheBacklog(t *testing.T) {
	e := newSizeEnv(t, quick.Options{Lanes: 16})
	var backlog []quick.NewJob
	for i := 0; i < 2000; i++ {
		backlog = append(backlog, quick.NewJob{TaskType: "email", Delay: time.Duration(i%300) * time.Second})
	}
	e.enqueue(t, backlog...)
	id := e.enqueue(t, quick.NewJob{TaskType: "email", Priority: quick.High})[0].ID
	l := e.claim(t, "w", 1)[0]
	if l.ID != id {
		t.Fatalf("claimed %s", l.ID)
	}
	e.clk.Advance(10 * time.Second)
	l, err := e.q.Extend(e.ctx, l, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := e.db.Stats()
	info, err := e.q.Get(e.ctx, id)
	if err != nil || info.State != quick.StateLeased || !info.RunAt.Equal(l.Deadline) || info.Lane != l.Lane() {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	d := e.db.Stats().Sub(before)
	if d.RangeReads != 0 || d.Reads > 5 {
		t.Fatalf("Get of a leased job among 2,000 cost %v; want at most 5 point reads", d)
	}
	before = e.db.Stats()
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.RangeReads != 0 || d.Reads > 5 {
		t.Fatalf("Cancel of a leased job among 2,000 cost %v", d)
	}
	if err := e.q.Complete(e.ctx, l); !quick.IsLeaseLost(err) {
		t.Fatalf("complete after cancel: %v", err)
	}
}
