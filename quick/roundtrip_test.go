package quick

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// depthDB counts the sequential read round trips of each transaction: a
// read issued after the transaction waited on a read of depth d has depth
// d+1; reads issued before any wait share depth 1. A transaction's depth is
// the longest chain of reads that each needed the one before, which is its
// read latency in round trips on any engine, whatever the timings.
type depthDB struct {
	kv.Database
	mu  sync.Mutex
	txs []*depthTx
}

func (d *depthDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	t := &depthTx{Transaction: tr}
	d.mu.Lock()
	d.txs = append(d.txs, t)
	d.mu.Unlock()
	return t, nil
}

func (d *depthDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *depthDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

// since returns the depths of the transactions created after the first n.
func (d *depthDB) since(n int) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for _, t := range d.txs[n:] {
		out = append(out, t.depth())
	}
	return out
}

func (d *depthDB) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.txs)
}

type depthTx struct {
	kv.Transaction
	mu       sync.Mutex
	waited   int // deepest read waited on so far, this attempt
	deepest  int
	attempts []int // depth of each attempt ended by OnError
}

func (t *depthTx) issue() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.waited + 1
	t.deepest = max(t.deepest, d)
	return d
}

func (t *depthTx) done(d int) {
	t.mu.Lock()
	t.waited = max(t.waited, d)
	t.mu.Unlock()
}

func (t *depthTx) depth() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deepest
}

func (t *depthTx) OnError(err error) error {
	if rerr := t.Transaction.OnError(err); rerr != nil {
		return rerr
	}
	t.mu.Lock()
	t.attempts = append(t.attempts, t.deepest)
	t.waited, t.deepest = 0, 0
	t.mu.Unlock()
	return nil
}

func (t *depthTx) Get(key []byte) kv.Future[[]byte] {
	return &depthGet{t: t, d: t.issue(), inner: t.Transaction.Get(key)}
}

func (t *depthTx) GetRange(r kv.KeyRange, o kv.RangeOptions) kv.RangeResult {
	return &depthRange{t: t, d: t.issue(), inner: t.Transaction.GetRange(r, o)}
}

func (t *depthTx) Snapshot() kv.ReadTransaction {
	return depthSnap{t: t, inner: t.Transaction.Snapshot()}
}

type depthSnap struct {
	t     *depthTx
	inner kv.ReadTransaction
}

func (s depthSnap) Get(key []byte) kv.Future[[]byte] {
	return &depthGet{t: s.t, d: s.t.issue(), inner: s.inner.Get(key)}
}

func (s depthSnap) GetRange(r kv.KeyRange, o kv.RangeOptions) kv.RangeResult {
	return &depthRange{t: s.t, d: s.t.issue(), inner: s.inner.GetRange(r, o)}
}

func (s depthSnap) GetReadVersion() kv.Future[int64] { return s.inner.GetReadVersion() }
func (s depthSnap) Snapshot() kv.ReadTransaction     { return s }

type depthGet struct {
	t     *depthTx
	d     int
	inner kv.Future[[]byte]
}

func (g *depthGet) Get() ([]byte, error) {
	v, err := g.inner.Get()
	g.t.done(g.d)
	return v, err
}

type depthRange struct {
	t     *depthTx
	d     int
	inner kv.RangeResult
}

func (r *depthRange) GetSliceWithError() ([]kv.KeyValue, error) {
	kvs, err := r.inner.GetSliceWithError()
	r.t.done(r.d)
	return kvs, err
}

func (r *depthRange) Iterator() kv.RangeIterator { return r.inner.Iterator() }

// A claim from the pointer index reads in two round trips: the index,
// then the picked lane's state and the lane's keys together (the lane
// read does not wait for the state read; it used to, a third round trip
// on an idle worker's path from wake-up to handler). In short-job mode
// too. And the claim still takes the job, from the lane the state names.
func TestZoneClaimReadsLaneWithItsState(t *testing.T) {
	for _, short := range []bool{false, true} {
		name := "per-job"
		if short {
			name = "short"
		}
		t.Run(name, func(t *testing.T) {
			raw, space := fdbtest.OpenMem(t, memkv.Options{})
			db := &depthDB{Database: raw}
			opts := Options{Clock: clock.NewFake(zcEpoch)}
			if short {
				opts.TaskTypes = map[string]TaskTypeOptions{"email": {ShortJobs: true}}
			}
			ctx := context.Background()
			q, err := Open(ctx, db, space, opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := q.Enqueue(ctx, NewJob{TaskType: "email", ItemSpace: "a"})
			if err != nil {
				t.Fatal(err)
			}
			n := db.count()
			c, err := q.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Jobs) != 1 || c.Jobs[0].ID != res[0].ID {
				t.Fatalf("claimed %+v, want the job", c.Jobs)
			}
			if d := db.since(n); len(d) != 1 || d[0] != 2 {
				t.Fatalf("the claim's transactions read in %v round trips, want one transaction of 2", d)
			}
		})
	}
}

// A lane read ahead for the wrong kind of claim is read again: a short-job
// task type that takes over a lapsed per-job lane lease claims it with
// per-job leases, from the lane as claimLane reads it.
func TestZoneClaimLapsedLaneOfTheOtherMode(t *testing.T) {
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	clk := clock.NewFake(zcEpoch)
	ctx := context.Background()
	perJob, err := Open(ctx, raw, space, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	short, err := Open(ctx, raw, space, Options{Clock: clk, TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := perJob.Enqueue(ctx, NewJob{TaskType: "email"}, NewJob{TaskType: "email"}, NewJob{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := perJob.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "a", Max: 1, Lease: time.Minute, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Jobs) != 1 || first.Lane == nil || first.Lane.Short {
		t.Fatalf("first claim %+v, want one job and the lane kept with per-job leases", first)
	}
	clk.Advance(perJob.Options().LaneLeaseTime + time.Second) // the lane lease lapses
	c, err := short.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "b", Max: 4, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[ID]bool{}
	for _, l := range c.Jobs {
		got[l.ID] = true
		if l.Short() {
			t.Fatalf("job %s handed out short from a lapsed lane", l.ID)
		}
	}
	for _, r := range res {
		if want := r.ID != first.Jobs[0].ID; got[r.ID] != want {
			t.Fatalf("took %d jobs over the lapsed lane (job %s taken: %v), want the two jobs left", len(c.Jobs), r.ID, got[r.ID])
		}
	}
}

// A claim continuing on a kept lane with per-job leases reads in one round
// trip: the lane's state (the hold check) and its keys together, so a
// worker draining a lane pays one read round trip per claim, not two.
func TestZoneContinuingClaimReadsInOneRoundTrip(t *testing.T) {
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	db := &depthDB{Database: raw}
	ctx := context.Background()
	q, err := Open(ctx, db, space, Options{Clock: clock.NewFake(zcEpoch)})
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]NewJob, 10)
	for i := range jobs {
		jobs[i] = NewJob{TaskType: "email", ItemSpace: "a"}
	}
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	first, err := q.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 3, Keep: true})
	if err != nil || first.Lane == nil || len(first.Jobs) != 3 {
		t.Fatalf("first claim = %d jobs, pointer %v, %v; want 3 and the lane kept", len(first.Jobs), first.Lane, err)
	}
	n := db.count()
	c, err := q.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 3, Keep: true, Lane: first.Lane})
	if err != nil || len(c.Jobs) != 3 {
		t.Fatalf("continuing claim = %d jobs, %v; want 3", len(c.Jobs), err)
	}
	if d := db.since(n); len(d) != 1 || d[0] != 1 {
		t.Fatalf("the continuing claim's transactions read in %v round trips, want one transaction of 1", d)
	}
}
