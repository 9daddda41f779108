package quick_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// drainZones claims every vested job of a task type through q, counting
// each ID, until a claim finds nothing.
func drainZones(t testing.TB, ctx context.Context, q *quick.Queue, taskType string) map[quick.ID]int {
	t.Helper()
	seen := map[quick.ID]int{}
	for range 100_000 {
		c, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: taskType, Holder: "drain", Max: 100, Lease: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range c.Jobs {
			seen[l.ID]++
		}
		if len(c.Jobs) == 0 && !c.More && (c.NextVest.IsZero() || c.NextVest.After(q.Now())) {
			return seen
		}
	}
	t.Fatal("drain did not end")
	return nil
}

// Enqueue under 1021 that applied or did not: every job is stored once,
// none lost and none twice, and each call reports its jobs as new. With
// AutomaticIdempotency the engine resolves the 1021 where it has the
// option (kv.WithFaults does as FDB's client), and the marker serves
// where it has not.
func TestZoneEnqueueIdempotentUnderUnknownResults(t *testing.T) {
	for name, f := range map[string]kv.Faults{
		"applied":     {Seed: 1, UnknownCommitted: 0.5},
		"not-applied": {Seed: 2, UnknownNotCommitted: 0.5},
		"mixed":       {Seed: 3, UnknownCommitted: 0.3, UnknownNotCommitted: 0.3, Conflict: 0.1},
	} {
		for _, auto := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/automatic-idempotency=%v", name, auto), func(t *testing.T) {
				e := newFaultEnv(t, f, quick.Options{ZoneLanes: 4, AutomaticIdempotency: auto})
				// Workers claim every job the moment a commit ends, before the
				// enqueue retries: a retry that wrote its jobs again would
				// create them a second time.
				seen := map[quick.ID]int{}
				q := overAfter(t, e, func() {
					for id, n := range drainZones(t, e.ctx, e.truth, "email") {
						seen[id] += n
					}
				})
				want := map[quick.ID]bool{}
				for call := range 40 {
					jobs := make([]quick.NewJob, 1+call%7)
					for i := range jobs {
						jobs[i] = quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("t%d", i%3), Payload: []byte("p")}
					}
					res, err := q.Enqueue(e.ctx, jobs...)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res {
						if r.Duplicate {
							t.Fatalf("call %d: a job of its own reported duplicate: %+v", call, r)
						}
						want[r.ID] = true
					}
				}
				if miss := e.faulty.Stats().Missing(f); len(miss) > 0 {
					t.Fatalf("faults never injected: %v", miss)
				}
				for id, n := range drainZones(t, e.ctx, e.truth, "email") {
					seen[id] += n
				}
				for id := range want {
					if seen[id] != 1 {
						t.Errorf("job %s stored %d times", id, seen[id])
					}
				}
				if len(seen) != len(want) {
					t.Errorf("drained %d jobs, enqueued %d", len(seen), len(want))
				}
			})
		}
	}
}

// EnqueueTx in the caller's own retry loop: jobs given IDs outside it are
// stored once whatever the commits report; a retry after an applied
// commit returns them as duplicates.
func TestZoneEnqueueTxIdempotentAcrossCallerRetries(t *testing.T) {
	f := kv.Faults{Seed: 7, UnknownCommitted: 0.4, UnknownNotCommitted: 0.3}
	e := newFaultEnv(t, f, quick.Options{})
	want := map[quick.ID]bool{}
	dups := 0
	for range 30 {
		jobs := []quick.NewJob{
			{ID: e.q.NewID(), TaskType: "email"},
			{ID: e.q.NewID(), TaskType: "email", ItemSpace: "other"},
		}
		for _, j := range jobs {
			want[j.ID] = true
		}
		err := e.faulty.Transact(e.ctx, func(tr kv.Transaction) error {
			res, err := e.q.EnqueueTx(tr, jobs...)
			if err == nil && res[0].Duplicate {
				dups++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if e.faulty.Stats().UnknownCommitted == 0 || dups == 0 {
		t.Fatalf("no applied 1021 was retried (faults %+v, duplicates %d)", e.faulty.Stats(), dups)
	}
	seen := drainZones(t, e.ctx, e.truth, "email")
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("job %s stored %d times", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("drained %d jobs, enqueued %d", len(seen), len(want))
	}
}

// One marker per enqueue transaction, not per job: a batch of 100 costs
// 100 job keys and one marker; claiming it two mutations a job and the
// lane's bookkeeping once.
//
// The type is Untracked: these are the figures of the cheap mode (a tracked
// job adds its lookup index entry to each write that places or moves it;
// BenchmarkZoneJobCostTracked measures both).
func TestZoneCostOfABatch(t *testing.T) {
	e := zonesEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"email": {Untracked: true}}})
	e.enqueue(t, quick.NewJob{TaskType: "email"}) // registers the type, creates the lane
	jobs := make([]quick.NewJob, 100)
	for i := range jobs {
		jobs[i] = quick.NewJob{TaskType: "email", Payload: make([]byte, 100)}
	}
	before := e.db.Stats()
	e.enqueue(t, jobs...)
	d := e.db.Stats().Sub(before)
	// 100 jobs + 1 marker; the lane's pointer already vests earlier.
	if d.Mutations != 101 || d.Commits != 1 {
		t.Fatalf("a batch of 100 cost %d mutations in %d commits, want 101 in 1", d.Mutations, d.Commits)
	}
	// Claiming them: a clear and a set each, and the lane's lease taken
	// and handed back in one write of the lane state: the first job is
	// left vested, so the lane goes behind every lane waiting (a clear and
	// a set of its pointer: docs/design.md, "Choosing a pointer").
	before = e.db.Stats()
	if c := e.zclaim(t, quick.ClaimOptions{Max: 100}); len(c.Jobs) != 100 {
		t.Fatalf("claimed %d jobs, want 100", len(c.Jobs))
	}
	d = e.db.Stats().Sub(before)
	if d.Mutations != 203 || d.Commits != 1 || d.KeysRead > 110 {
		t.Fatalf("a claim of 100 cost %d mutations in %d commits reading %d keys, want 203 in 1 reading at most 110", d.Mutations, d.Commits, d.KeysRead)
	}
}

// idemDB offers the kv option SetAutomaticIdempotency on its
// transactions, as the FDB engine does, and records its use.
type idemDB struct {
	kv.Database
	set    int
	refuse bool // the engine refuses the option
}

func (d *idemDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &idemTx{Transaction: tr, db: d}, nil
}

func (d *idemDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type idemTx struct {
	kv.Transaction
	db *idemDB
}

func (t *idemTx) Options() kv.TransactionOptions {
	return idemOpts{TransactionOptions: t.Transaction.Options(), db: t.db}
}

type idemOpts struct {
	kv.TransactionOptions
	db *idemDB
}

func (o idemOpts) SetAutomaticIdempotency() error {
	if o.db.refuse {
		return errors.New("automatic idempotency is not supported")
	}
	o.db.set++
	return nil
}

// With Options.AutomaticIdempotency on an engine that has the option,
// Enqueue sets it, and still writes its marker (the option does not resolve
// a timeout or cancellation striking the commit); where the engine refuses
// the option, the marker alone pays for idempotency.
func TestZoneEnqueueAutomaticIdempotency(t *testing.T) {
	// Untracked: the figures count no lookup index entries.
	e := zonesEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"email": {Untracked: true}}})
	db := &idemDB{Database: e.db}
	opts := e.q.Options()
	opts.AutomaticIdempotency = true
	q, err := quick.Open(e.ctx, db, e.q.Subspace(), opts)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []quick.NewJob{{TaskType: "email"}, {TaskType: "email"}}
	if _, err := q.Enqueue(e.ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	before := e.db.Stats()
	if _, err := q.Enqueue(e.ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Mutations != 3 || db.set != 2 {
		t.Fatalf("with the option: %d mutations (want 3: two jobs and the marker), option set %d times", d.Mutations, db.set)
	}
	// An engine that refuses the option: the marker pays for idempotency.
	plain, err := quick.Open(e.ctx, &idemDB{Database: e.db, refuse: true}, e.q.Subspace(), opts)
	if err != nil {
		t.Fatal(err)
	}
	before = e.db.Stats()
	if _, err := plain.Enqueue(e.ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Mutations != 3 {
		t.Fatalf("without the option: %d mutations, want 3 (2 jobs and the marker)", d.Mutations)
	}
}

// overAfter opens the env's queue over its faulty database with after
// called after every commit that reaches the engine.
func overAfter(t testing.TB, e *faultEnv, after func()) *quick.Queue {
	t.Helper()
	on := false
	db := &hookDB{Database: e.faulty, after: func() {
		if on {
			after()
		}
	}}
	q, err := quick.Open(e.ctx, db, e.space, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	on = true
	return q
}

// With automatic idempotency set but a commit's outcome still reported
// unknown (the engine did not resolve it), the retry reads the keys the
// attempt wrote instead of a marker: 0 lost, 0 duplicated.
func TestZoneEnqueueAutomaticIdempotencyUnresolved(t *testing.T) {
	f := kv.Faults{Seed: 11, UnknownCommitted: 0.4, UnknownNotCommitted: 0.3}
	e := newFaultEnv(t, f, quick.Options{})
	db := &idemDB{Database: e.faulty}
	opts := e.opts
	opts.AutomaticIdempotency = true
	q, err := quick.Open(e.ctx, db, e.space, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[quick.ID]bool{}
	for range 30 {
		res, err := q.Enqueue(e.ctx, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "email", ItemSpace: "b"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Duplicate {
				t.Fatalf("own job reported duplicate: %+v", r)
			}
			want[r.ID] = true
		}
	}
	if e.faulty.Stats().UnknownCommitted == 0 || db.set == 0 {
		t.Fatal("no applied 1021, or the option never set")
	}
	seen := drainZones(t, e.ctx, e.truth, "email")
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("job %s stored %d times", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("drained %d jobs, enqueued %d", len(seen), len(want))
	}
}
