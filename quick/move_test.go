package quick

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// moveFaults are the commit faults a move's tests inject into every
// transaction of both databases: 1021 (applied and not), 1020 and 1031
// striking a commit that applied.
func moveFaults(seed uint64) kv.Faults {
	return kv.Faults{Seed: seed, UnknownCommitted: 0.04, UnknownNotCommitted: 0.03, Conflict: 0.04, TimedOutCommitted: 0.03}
}

// moveSide is one end of a move: a queue over a database that injects
// faults, and one over the same data without them.
type moveSide struct {
	raw       kv.Database
	q, truth  *Queue
	space     tuple.Subspace
	zoneSpace func(string) tuple.Subspace
}

func openSide(t *testing.T, raw kv.Database, space tuple.Subspace, zs func(string) tuple.Subspace, clk clock.Clock, f *kv.Faults) *moveSide {
	t.Helper()
	ctx := context.Background()
	opts := Options{Clock: clk, ZoneLanes: 2, ZoneSpace: zs, TaskTypes: map[string]TaskTypeOptions{"email": {}}}
	truth, err := Open(ctx, raw, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	db := raw
	if f != nil {
		db = kv.WithFaults(raw, *f)
	}
	q, err := Open(ctx, db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &moveSide{raw: raw, q: q, truth: truth, space: space, zoneSpace: zs}
}

// moveRun counts what happened to each job of a move's test.
type moveRun struct {
	t    *testing.T
	ctx  context.Context
	clk  *clock.Fake
	runs map[ID]int  // times a claim returned the job
	done map[ID]bool // a Complete succeeded
	// fenced are the jobs leased when the move started: the only ones that
	// may run twice.
	fenced map[ID]bool
}

func newMoveRun(t *testing.T, clk *clock.Fake) *moveRun {
	return &moveRun{t: t, ctx: context.Background(), clk: clk, runs: map[ID]int{}, done: map[ID]bool{}, fenced: map[ID]bool{}}
}

// claim runs one claim of q and returns its leases, counting the runs.
func (r *moveRun) claim(q *Queue, max int) []Lease {
	r.t.Helper()
	res, err := q.Consumer().Claim(r.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: max, Lease: time.Minute})
	if err != nil {
		r.t.Fatalf("claim: %v", err)
	}
	for _, l := range res.Jobs {
		r.runs[l.ID]++
	}
	return res.Jobs
}

// complete acks a lease; a lost lease is fine (the job runs again).
func (r *moveRun) complete(q *Queue, l Lease) {
	r.t.Helper()
	err := q.Complete(r.ctx, l)
	switch {
	case err == nil:
		r.done[l.ID] = true
	case IsLeaseLost(err):
	default:
		r.t.Fatalf("complete %s: %v", l.ID, err)
	}
}

// drain claims and completes everything q has, advancing the clock past
// every lease and delay.
func (r *moveRun) drain(q *Queue) {
	r.t.Helper()
	for range 2000 {
		res, err := q.Consumer().Claim(r.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 50, Lease: time.Minute})
		if err != nil {
			r.t.Fatalf("claim: %v", err)
		}
		for _, l := range res.Jobs {
			r.runs[l.ID]++
			r.complete(q, l)
		}
		if len(res.Jobs) == 0 {
			if res.NextVest.IsZero() {
				return
			}
			r.clk.Advance(time.Second)
		}
	}
	r.t.Fatal("drain: the queue never emptied")
}

// check asserts every job ran and completed, and that only fenced jobs ran
// twice; it returns how many did.
func (r *moveRun) check(ids []ID) int {
	r.t.Helper()
	twice := 0
	for _, id := range ids {
		n := r.runs[id]
		switch {
		case n == 0 || !r.done[id]:
			r.t.Errorf("job %s lost: ran %d times, completed %v", id, n, r.done[id])
		case n == 2 && r.fenced[id]:
			twice++
		case n != 1:
			r.t.Errorf("job %s ran %d times (leased at the fence: %v)", id, n, r.fenced[id])
		}
	}
	return twice
}

func enqueueN(t *testing.T, q *Queue, itemSpace string, n int, unique bool) []ID {
	t.Helper()
	var ids []ID
	for i := 0; i < n; i += 100 {
		var js []NewJob
		for k := i; k < min(i+100, n); k++ {
			j := NewJob{TaskType: "email", ItemSpace: itemSpace, Payload: []byte(fmt.Sprintf("job %d", k))}
			if unique && k%10 == 0 {
				j.UniqueKey = fmt.Sprintf("%s-u%d", itemSpace, k)
			}
			if k%50 == 1 {
				j.Payload = bytes.Repeat([]byte{'x'}, 3000) // a blob
			}
			if k%7 == 0 {
				j.Priority = High
			}
			js = append(js, j)
		}
		res, err := q.Enqueue(context.Background(), js...)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// assertNoTenantKeys checks that nothing of itemSpace's zone of email is
// left in q's database: no key under the zone, no pointer naming it.
func assertNoTenantKeys(t *testing.T, q *Queue, itemSpace string, ids []ID) {
	t.Helper()
	z := q.zoneOf("email", itemSpace)
	err := q.db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(rangeOf(z.space), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > 0 {
			t.Errorf("%d keys left under the zone, the first %x", len(kvs), kvs[0].Key)
		}
		ptrs, err := tr.GetRange(rangeOf(q.zk.ptr), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range ptrs {
			if bytes.Contains(p.Value, z.space.Bytes()) {
				t.Errorf("a pointer of the zone is left: %x", p.Key)
			}
		}
		for _, id := range ids {
			if v, err := tr.Get(q.zk.indexKey(id)).Get(); err != nil || v != nil {
				t.Errorf("index entry of %s left (%v)", id, err)
			}
		}
		ops, err := tr.GetRange(rangeOf(q.k.moveSpace()), kv.RangeOptions{}).GetSliceWithError()
		if len(ops) > 0 {
			t.Errorf("a tenant operation record is left: %s", ops[0].Value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// assertNoFence checks that no lane of the zone is leased by a tenant
// operation any more.
func assertNoFence(t *testing.T, q *Queue, itemSpace string) {
	t.Helper()
	z := q.zoneOf("email", itemSpace)
	err := q.db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(rangeOf(z.space.Sub(int64(zLane))), kv.RangeOptions{}).GetSliceWithError()
		for _, kvp := range kvs {
			var s laneState
			if s.unmarshal(kvp.Value) == nil && s.Holder == fenceHolder {
				t.Errorf("lane %x still fenced", kvp.Key)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moveCase is one move under test: between two databases or within one.
type moveCase struct {
	name string
	open func(t *testing.T, clk *clock.Fake, f *kv.Faults) (src, dst *moveSide)
}

var moveCases = []moveCase{
	{"between-databases", func(t *testing.T, clk *clock.Fake, f *kv.Faults) (*moveSide, *moveSide) {
		a, sa := fdbtest.OpenMem(t, memkv.Options{})
		b, sb := fdbtest.OpenMem(t, memkv.Options{})
		var fb *kv.Faults
		if f != nil {
			g := *f
			g.Seed++
			fb = &g
		}
		return openSide(t, a, sa.Sub("q"), nil, clk, f), openSide(t, b, sb.Sub("q"), nil, clk, fb)
	}},
	{"within-a-database", func(t *testing.T, clk *clock.Fake, f *kv.Faults) (*moveSide, *moveSide) {
		a, sa := fdbtest.OpenMem(t, memkv.Options{})
		old := func(is string) tuple.Subspace { return sa.Sub("old", is) }
		moved := func(is string) tuple.Subspace { return sa.Sub("new", is) }
		src := openSide(t, a, sa.Sub("q"), old, clk, f)
		// The same queue, and the same faulty handle, with the new
		// placement of the tenants' zones.
		dst := openSide(t, a, sa.Sub("q"), moved, clk, nil)
		opts := src.q.opts
		opts.ZoneSpace = moved
		q, err := Open(context.Background(), src.q.db, src.space, opts)
		if err != nil {
			t.Fatal(err)
		}
		dst.q = q
		return src, dst
	}},
}

// A tenant moved while claims run on both sides and every commit may fail
// with 1021, 1020 or 1031: 0 lost, every job completes, and only the jobs
// leased at the fence run twice. Claims in between the batches find no job
// of the tenant at the source after the fence nor at the destination before
// the adoption; jobs enqueued at both ends during the move run too.
func TestMoveTenantWhileClaimsRunUnderFaults(t *testing.T) {
	for _, mc := range moveCases {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed-%d", mc.name, seed), func(t *testing.T) {
				clk := clock.NewFake(zepoch)
				f := moveFaults(seed)
				src, dst := mc.open(t, clk, &f)
				r := newMoveRun(t, clk)
				ids := enqueueN(t, src.truth, "acme", 400, true)
				others := enqueueN(t, src.truth, "other", 50, false)
				clk.Advance(time.Second)
				// Lease some of the tenant's jobs before the move.
				var held []Lease
				for len(held) < 30 {
					for _, l := range r.claim(src.q, 10) {
						if l.ItemSpace == "acme" {
							r.fenced[l.ID] = true
							held = append(held, l)
						} else {
							r.complete(src.q, l)
						}
					}
				}
				adopted := false
				onSource := map[ID]bool{}
				for _, id := range ids {
					onSource[id] = true
				}
				srcZone := src.q.zoneOf("email", "acme").space.Bytes()
				dstZone := dst.q.zoneOf("email", "acme").space.Bytes()
				// In one queue, either handle claims from either zone: what
				// counts is the zone a lease is in.
				checkLease := func(name string, l Lease) {
					z := l.zl.lane.z.space.Bytes()
					if bytes.Equal(z, srcZone) {
						t.Errorf("step %s: claimed %s at the source after the fence", name, l.ID)
					}
					if bytes.Equal(z, dstZone) && !adopted && onSource[l.ID] {
						t.Errorf("step %s: claimed moved job %s at the destination before the adoption", name, l.ID)
					}
				}
				step := 0
				hook := func(_, name string) error {
					step++
					if name == stepAdopt {
						adopted = true
					}
					// A claim at each end.
					for _, l := range r.claim(src.q, 5) {
						checkLease(name, l)
						r.complete(src.q, l)
					}
					for _, l := range r.claim(dst.q, 5) {
						checkLease(name, l)
						r.complete(dst.q, l)
					}
					// The holder of a job leased at the fence acks it.
					if len(held) > 0 {
						r.complete(src.q, held[0])
						held = held[1:]
					}
					if step%4 == 0 {
						// Enqueues at both ends while the move runs.
						ids = append(ids, enqueueN(t, src.truth, "acme", 3, false)...)
						ids = append(ids, enqueueN(t, dst.truth, "acme", 3, false)...)
					}
					clk.Advance(100 * time.Millisecond)
					return nil
				}
				res, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{TaskType: "email", Batch: 37, afterStep: hook})
				if err != nil {
					t.Fatal(err)
				}
				if res.Jobs < 300 {
					t.Errorf("moved %d jobs, want at least 300", res.Jobs)
				}
				for _, l := range held {
					r.complete(src.q, l)
				}
				clk.Advance(2 * time.Minute)
				r.drain(dst.q)
				r.drain(src.q)
				twice := r.check(ids)
				r.check(others)
				t.Logf("moved %d, %d leased at the fence, %d of them ran twice; faults %+v", res.Jobs, len(r.fenced), twice, faultStats(src.q.db))
				assertNoFence(t, dst.truth, "acme")
				assertNoTenantKeys(t, src.truth, "acme", nil)
				if !sameQueueForTest(src.q, dst.q) {
					assertNoTenantKeys(t, src.truth, "acme", ids)
				}
			})
		}
	}
}

func faultStats(db kv.Database) kv.FaultStats {
	if f, ok := db.(*kv.FaultyDB); ok {
		return f.Stats()
	}
	return kv.FaultStats{}
}

// A move stopped after each of its steps (a crash) and called again, under
// the commit faults, carries on from its record: every job runs once, the source is left
// empty, and the lookup index and unique keys follow the jobs.
func TestMoveTenantResumesAfterACrashAtEachStep(t *testing.T) {
	for _, mc := range moveCases {
		for i, at := range []string{stepFence, "batch", "batch#3", stepCopy, stepAdopt, stepDelete} {
			t.Run(mc.name+"/"+at, func(t *testing.T) {
				clk := clock.NewFake(zepoch)
				f := moveFaults(uint64(100 + i))
				src, dst := mc.open(t, clk, &f)
				r := newMoveRun(t, clk)
				ids := enqueueN(t, src.truth, "acme", 200, true)
				seen := 0
				stop := func(_, name string) error {
					if name == "batch" {
						seen++
						if at == "batch#3" && seen == 3 {
							return errStop
						}
					}
					if name == at {
						return errStop
					}
					return nil
				}
				_, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{Batch: 40, afterStep: stop})
				if !errors.Is(err, errStop) {
					t.Fatalf("stopped move: %v", err)
				}
				ops, err := src.q.TenantOps(r.ctx, 0)
				if at != stepDelete && (err != nil || len(ops) != 1 || ops[0].Kind != opMove) {
					t.Fatalf("tenant ops after the crash: %+v, %v", ops, err)
				}
				// Another operation on the tenant waits for this one.
				if _, err := src.q.DeleteTenant(r.ctx, "acme", DeleteOptions{}); at != stepDelete && !errors.Is(err, ErrTenantBusy) {
					t.Fatalf("delete during a move: %v, want ErrTenantBusy", err)
				}
				res, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{Batch: 40})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Resumed && at != stepDelete {
					t.Errorf("the second call did not resume")
				}
				// The lookup index and unique keys name the destination.
				info, err := dst.q.Get(r.ctx, ids[5])
				if err != nil || info.ItemSpace != "acme" {
					t.Fatalf("Get of a moved job at the destination: %+v, %v", info, err)
				}
				if h, err := dst.q.UniqueHolder(r.ctx, "email", "acme-u10"); err != nil || h != ids[10] {
					t.Fatalf("unique key at the destination held by %s, %v; want %s", h, err, ids[10])
				}
				clk.Advance(time.Second)
				r.drain(dst.q)
				r.drain(src.q)
				r.check(ids)
				assertNoFence(t, dst.truth, "acme")
				assertNoTenantKeys(t, src.truth, "acme", nil)
				if !sameQueueForTest(src.q, dst.q) {
					assertNoTenantKeys(t, src.truth, "acme", ids)
					if h, err := src.q.UniqueHolder(r.ctx, "email", "acme-u10"); err == nil {
						t.Errorf("unique key left at the source, held by %s", h)
					}
				}
			})
		}
	}
}

// The fence: once a move has fenced the source, no claim takes the
// tenant's jobs there (mutant quick.move-fence).
func TestMoveFenceStopsClaimsAtTheSource(t *testing.T) {
	clk := clock.NewFake(zepoch)
	src, dst := moveCases[0].open(t, clk, nil)
	r := newMoveRun(t, clk)
	enqueueN(t, src.truth, "acme", 20, false)
	other := enqueueN(t, src.truth, "other", 1, false)
	clk.Advance(time.Second)
	stop := func(_, name string) error {
		if name == stepFence {
			return errStop
		}
		return nil
	}
	if _, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{afterStep: stop}); !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	var got []ID
	for range 10 {
		for _, l := range r.claim(src.q, 10) {
			got = append(got, l.ID)
			if l.ItemSpace == "acme" {
				t.Fatalf("claimed %s of the fenced tenant at the source", l.ID)
			}
		}
	}
	if len(got) != 1 || got[0] != other[0] {
		t.Fatalf("claimed %v; want the other tenant's job alone", got)
	}
	// Enqueues into the fenced zone wait for the move too.
	enqueueN(t, src.truth, "acme", 5, false)
	clk.Advance(time.Second)
	if ls := r.claim(src.q, 10); len(ls) != 0 {
		t.Fatalf("claimed %d jobs enqueued into the fenced zone", len(ls))
	}
}

// The revoke: a job leased at the fence and read by a copy batch can no
// longer be failed, snoozed, extended or completed at the source (mutant
// quick.move-revoke); without it a fail landing between the copy and the
// source's clear would leave the job twice at the destination.
func TestMoveRevokesLeasesItCopies(t *testing.T) {
	clk := clock.NewFake(zepoch)
	src, dst := moveCases[0].open(t, clk, nil)
	r := newMoveRun(t, clk)
	enqueueN(t, src.truth, "acme", 3, false)
	clk.Advance(time.Second)
	var held []Lease
	for range 10 {
		held = append(held, r.claim(src.q, 3)...)
	}
	if len(held) != 3 {
		t.Fatalf("claimed %d", len(held))
	}
	z := src.q.zoneOf("email", "acme")
	tok := newToken()
	if err := src.q.fenceZone(r.ctx, z, tok, clk.Now().Add(time.Hour).UnixMilli(), 0, "quick.move-fence"); err != nil {
		t.Fatal(err)
	}
	batch, err := src.q.readMoveBatch(r.ctx, z, 10)
	if err != nil || len(batch) != 3 {
		t.Fatalf("batch %d, %v", len(batch), err)
	}
	if err := dst.q.writeMoveBatch(r.ctx, dst.q.zoneOf("email", "acme"), batch, z); err != nil {
		t.Fatal(err)
	}
	if err := src.q.Fail(r.ctx, held[0], "boom"); !IsLeaseLost(err) {
		t.Fatalf("fail of a revoked lease: %v, want ErrLeaseLost", err)
	}
	if err := src.q.Complete(r.ctx, held[1]); !IsLeaseLost(err) {
		t.Fatalf("complete of a revoked lease: %v, want ErrLeaseLost", err)
	}
	if _, err := src.q.Extend(r.ctx, held[2], time.Minute); !IsLeaseLost(err) {
		t.Fatalf("extend of a revoked lease: %v, want ErrLeaseLost", err)
	}
}

// A tenant's zones copied byte for byte into another queue's tenant space
// (lane states and jobs, no pointers, no index) are all claimable after
// AdoptTenant, without an enqueue; Get and unique keys work there.
func TestAdoptTenantAfterARawCopy(t *testing.T) {
	clk := clock.NewFake(zepoch)
	raw, root := fdbtest.OpenMem(t, memkv.Options{})
	srcT, dstT := root.Sub("src-t"), root.Sub("dst-t")
	src := openSide(t, raw, root.Sub("src"), func(is string) tuple.Subspace { return srcT.Sub(is) }, clk, nil)
	f := moveFaults(7)
	dst := openSide(t, raw, root.Sub("dst"), func(is string) tuple.Subspace { return dstT.Sub(is) }, clk, &f)
	r := newMoveRun(t, clk)
	if err := src.truth.SetZoneLanes(r.ctx, "email", "acme", 4); err != nil {
		t.Fatal(err)
	}
	ids := enqueueN(t, src.truth, "acme", 300, true)
	clk.Advance(time.Second)
	leased := r.claim(src.truth, 5) // copied while leased
	for _, l := range leased {
		r.fenced[l.ID] = true
	}
	// A delayed job too.
	late, err := src.truth.Enqueue(r.ctx, NewJob{TaskType: "email", ItemSpace: "acme", Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, late[0].ID)
	from, to := srcT.Sub("acme"), dstT.Sub("acme")
	err = raw.Transact(r.ctx, func(tr kv.Transaction) error {
		kvs, err := tr.GetRange(rangeOf(from), kv.RangeOptions{}).GetSliceWithError()
		for _, kvp := range kvs {
			tr.Set(append(bytes.Clone(to.Bytes()), kvp.Key[len(from.Bytes()):]...), kvp.Value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Before: nothing claimable at the destination.
	if ls := r.claim(dst.truth, 10); len(ls) != 0 {
		t.Fatalf("claimed %d before the adoption", len(ls))
	}
	res, err := dst.q.AdoptTenant(r.ctx, "acme", AdoptOptions{TaskType: "email", Batch: 64})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != int64(len(ids)) {
		t.Errorf("adopted %d jobs, want %d", res.Jobs, len(ids))
	}
	// Idempotent: a second adoption changes nothing that matters.
	if _, err := dst.q.AdoptTenant(r.ctx, "acme", AdoptOptions{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	if info, err := dst.q.Get(r.ctx, ids[3]); err != nil || info.ItemSpace != "acme" {
		t.Fatalf("Get after the adoption: %+v, %v", info, err)
	}
	if h, err := dst.q.UniqueHolder(r.ctx, "email", "acme-u20"); err != nil || h != ids[20] {
		t.Fatalf("unique key after the adoption: %s, %v", h, err)
	}
	// Every job comes, the delayed one at its time, the leased ones once
	// their (copied) lease has lapsed.
	before := map[ID]int{}
	for _, l := range leased {
		before[l.ID] = r.runs[l.ID]
		r.runs[l.ID] = 0
		r.done[l.ID] = false
	}
	clk.Advance(2 * time.Hour)
	r.drain(dst.q)
	for _, id := range ids {
		if r.runs[id] != 1 || !r.done[id] {
			t.Errorf("job %s ran %d times at the destination, completed %v", id, r.runs[id], r.done[id])
		}
	}
}

// DeleteTenant removes every key of the tenant's zone, its pointers,
// index entries, unique keys and limits; a job leased at the time cannot
// be acked afterwards; the other tenant is untouched.
func TestDeleteTenantLeavesNoKey(t *testing.T) {
	clk := clock.NewFake(zepoch)
	f := moveFaults(11)
	side, _ := moveCases[0].open(t, clk, &f)
	r := newMoveRun(t, clk)
	q := side.q
	if err := q.SetZoneLanes(r.ctx, "email", "acme", 3); err != nil {
		t.Fatal(err)
	}
	ids := enqueueN(t, side.truth, "acme", 250, true)
	others := enqueueN(t, side.truth, "other", 20, true)
	if err := side.truth.SetTenantLimits(r.ctx, "email", "acme", Limits{Concurrency: 50}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	var held []Lease
	for len(held) == 0 {
		for _, l := range r.claim(side.truth, 5) {
			if l.ItemSpace == "acme" {
				held = append(held, l)
			} else {
				r.complete(side.truth, l)
			}
		}
	}
	res, err := q.DeleteTenant(r.ctx, "acme", DeleteOptions{Batch: 33})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 250 {
		t.Errorf("deleted %d jobs", res.Jobs)
	}
	for _, l := range held {
		if err := side.truth.Complete(r.ctx, l); !IsLeaseLost(err) {
			t.Errorf("complete of a deleted job: %v, want ErrLeaseLost", err)
		}
	}
	assertNoTenantKeys(t, side.truth, "acme", ids)
	err = side.raw.ReadTransact(r.ctx, func(tr kv.ReadTransaction) error {
		for _, k := range [][]byte{side.truth.k.uniqKey("email", "acme-u10"), side.truth.k.tenantLimitKey("email", "acme")} {
			if v, err := tr.Get(k).Get(); err != nil || v != nil {
				t.Errorf("key %x left (%v)", k, err)
			}
		}
		kvs, err := tr.GetRange(rangeOf(side.truth.k.limitState("email", "acme")), kv.RangeOptions{}).GetSliceWithError()
		if len(kvs) > 0 {
			t.Errorf("%d keys of the tenant's limits state left", len(kvs))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	r.drain(side.truth)
	for _, id := range others {
		if !r.done[id] {
			t.Errorf("the other tenant's job %s did not run", id)
		}
	}
	for _, id := range ids {
		if r.done[id] {
			t.Errorf("a deleted job %s ran", id)
		}
	}
}

func TestMoveRecordDecodesOrSaysCorrupt(t *testing.T) {
	var r moveRecord
	for _, b := range [][]byte{nil, []byte("{"), []byte(`{"kind":"x"}`), []byte(`[]`)} {
		if err := r.unmarshal(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("unmarshal(%q) = %v, want ErrCorrupt", b, err)
		}
	}
	in := moveRecord{Kind: opMove, Step: stepCopy, Token: 7, Dest: []byte{1, 2}, Done: 3}
	if err := r.unmarshal(in.marshal()); err != nil || r.Token != 7 || !bytes.Equal(r.Dest, in.Dest) {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
}

func FuzzMoveRecord(f *testing.F) {
	f.Add([]byte(`{"kind":"move","step":"copy","token":1}`))
	f.Add([]byte(`{"kind":"adopt","cursor":"AAE="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r moveRecord
		if r.unmarshal(b) == nil {
			var r2 moveRecord
			if err := r2.unmarshal(r.marshal()); err != nil {
				t.Fatalf("re-decoding %q: %v", r.marshal(), err)
			}
		}
	})
}

// A source zone whose lane count was lowered after it spread jobs over
// more lanes: the move fences and carries the lanes above the count too,
// and every job is claimable at the destination.
func TestMoveTenantCarriesLanesAboveTheCount(t *testing.T) {
	clk := clock.NewFake(zepoch)
	src, dst := moveCases[0].open(t, clk, nil)
	r := newMoveRun(t, clk)
	if err := src.truth.SetZoneLanes(r.ctx, "email", "acme", 8); err != nil {
		t.Fatal(err)
	}
	ids := enqueueN(t, src.truth, "acme", 200, false)
	if err := src.truth.SetZoneLanes(r.ctx, "email", "acme", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{Batch: 50}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	r.drain(dst.q)
	r.check(ids)
	assertNoTenantKeys(t, src.truth, "acme", ids)
}

// Workers claiming and completing from both queues in goroutines while a
// tenant moves (run with -race): 0 lost, only jobs leased at the fence
// run twice.
func TestMoveTenantWithConcurrentWorkers(t *testing.T) {
	clk := clock.NewFake(zepoch)
	src, dst := moveCases[0].open(t, clk, nil)
	ctx := context.Background()
	const n = 1500
	ids := enqueueN(t, src.truth, "acme", n, true)
	clk.Advance(time.Second)
	var mu sync.Mutex
	runs := map[ID]int{}
	done := map[ID]bool{}
	leasedBefore := map[ID]bool{} // leased before the move's end
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, q := range []*Queue{src.q, dst.q} {
					res, err := q.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: fmt.Sprint("w", w), Max: 8, Lease: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					for _, l := range res.Jobs {
						mu.Lock()
						runs[l.ID]++
						mu.Unlock()
						err := q.Complete(ctx, l)
						if err != nil && !IsLeaseLost(err) {
							t.Error(err)
							return
						}
						mu.Lock()
						done[l.ID] = done[l.ID] || err == nil
						mu.Unlock()
					}
				}
				runtime.Gosched()
			}
		}()
	}
	// Every job claimed before the move ends may have been leased at the
	// fence: the check below allows those a second run.
	_, err := src.q.MoveTenant(ctx, "acme", dst.q, MoveOptions{Batch: 100})
	mu.Lock()
	for id := range runs {
		leasedBefore[id] = true
	}
	mu.Unlock()
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	for range 600 {
		mu.Lock()
		all := len(done) == n
		for _, d := range done {
			all = all && d
		}
		mu.Unlock()
		if all {
			break
		}
		clk.Advance(time.Second) // the revoked leases' deadlines pass
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	twice := 0
	for _, id := range ids {
		switch {
		case !done[id]:
			t.Errorf("job %s lost (ran %d times)", id, runs[id])
		case runs[id] == 2 && leasedBefore[id]:
			twice++
		case runs[id] != 1:
			t.Errorf("job %s ran %d times", id, runs[id])
		}
	}
	t.Logf("%d jobs, %d ran twice", n, twice)
	assertNoTenantKeys(t, src.truth, "acme", ids)
}

// Short-job mode: a holder's lane lease is what protects the jobs it was
// handed out. The fence takes the lane, so the holder's acks fail, and the
// jobs run once more at the destination; nothing is lost.
func TestMoveTenantFencesShortJobLanes(t *testing.T) {
	src, dst, r, ids, held := shortMoveSetup(t)
	stop := func(_, name string) error {
		if name == stepFence {
			return errStop
		}
		return nil
	}
	if _, err := src.MoveTenant(r.ctx, "acme", dst, MoveOptions{afterStep: stop}); !errors.Is(err, errStop) {
		t.Fatal(err)
	}
	for _, l := range held {
		if err := src.Complete(r.ctx, l); !IsLeaseLost(err) {
			t.Fatalf("complete under a fenced short-job lane: %v, want ErrLeaseLost", err)
		}
	}
	if _, err := src.MoveTenant(r.ctx, "acme", dst, MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Minute)
	r.drain(dst)
	if twice := r.check(ids); twice != len(held) {
		t.Errorf("%d of the %d jobs held at the fence ran twice, want all", twice, len(held))
	}
	assertNoTenantKeys(t, src, "acme", ids)
}

// An adoption and a deletion stopped after a batch (a crash) and called
// again carry on from their record, under the commit faults: every job
// is adopted (claimable) or deleted, nothing is left of the operation.
func TestAdoptAndDeleteResumeAfterACrash(t *testing.T) {
	for _, stopAt := range []int{1, 3, 5} { // 5: the adoption's lanes step, the deletion's last batch
		t.Run(fmt.Sprint("batch-", stopAt), func(t *testing.T) {
			clk := clock.NewFake(zepoch)
			raw, root := fdbtest.OpenMem(t, memkv.Options{})
			srcT, dstT := root.Sub("src-t"), root.Sub("dst-t")
			src := openSide(t, raw, root.Sub("src"), func(is string) tuple.Subspace { return srcT.Sub(is) }, clk, nil)
			f := moveFaults(uint64(stopAt))
			dst := openSide(t, raw, root.Sub("dst"), func(is string) tuple.Subspace { return dstT.Sub(is) }, clk, &f)
			r := newMoveRun(t, clk)
			if err := src.truth.SetZoneLanes(r.ctx, "email", "acme", 4); err != nil {
				t.Fatal(err)
			}
			ids := enqueueN(t, src.truth, "acme", 200, true)
			from, to := srcT.Sub("acme"), dstT.Sub("acme")
			err := raw.Transact(r.ctx, func(tr kv.Transaction) error {
				kvs, err := tr.GetRange(rangeOf(from), kv.RangeOptions{}).GetSliceWithError()
				for _, kvp := range kvs {
					tr.Set(append(bytes.Clone(to.Bytes()), kvp.Key[len(from.Bytes()):]...), kvp.Value)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			stopper := func() func() error {
				n := 0
				return func() error {
					if n++; n == stopAt {
						return errStop
					}
					return nil
				}
			}
			if _, err := dst.q.AdoptTenant(r.ctx, "acme", AdoptOptions{TaskType: "email", Batch: 64, afterBatch: stopper()}); !errors.Is(err, errStop) {
				t.Fatalf("stopped adoption: %v", err)
			}
			if res, err := dst.q.AdoptTenant(r.ctx, "acme", AdoptOptions{TaskType: "email", Batch: 64}); err != nil || !res.Resumed {
				t.Fatalf("resumed adoption: %+v, %v", res, err)
			}
			if _, err := src.q.DeleteTenant(r.ctx, "acme", DeleteOptions{TaskType: "email", Batch: 40, afterBatch: stopper()}); !errors.Is(err, errStop) {
				t.Fatalf("stopped deletion: %v", err)
			}
			if ops, err := src.q.TenantOps(r.ctx, 0); err != nil || len(ops) != 1 || ops[0].Kind != opDelete {
				t.Fatalf("tenant ops after the crash: %+v, %v", ops, err)
			}
			if res, err := src.q.DeleteTenant(r.ctx, "acme", DeleteOptions{TaskType: "email", Batch: 40}); err != nil || !res.Resumed || res.Jobs != 200 {
				t.Fatalf("resumed deletion: %+v, %v", res, err)
			}
			assertNoTenantKeys(t, src.truth, "acme", ids)
			clk.Advance(time.Second)
			r.drain(dst.q)
			r.check(ids)
		})
	}
}

// sameQueueForTest: the two handles of a case are one queue.
func sameQueueForTest(a, b *Queue) bool {
	return sameDB(a.db, b.db) && bytes.Equal(a.space.Bytes(), b.space.Bytes())
}

// Two handles opened separately on one database and one queue subspace are
// recognised as one queue: the lookup index and unique keys, which the copy
// points at the destination, are not cleared at the source's side.
func TestMoveTenantBetweenTwoHandlesOfOneQueue(t *testing.T) {
	clk := clock.NewFake(zepoch)
	raw, root := fdbtest.OpenMem(t, memkv.Options{})
	src := openSide(t, raw, root.Sub("q"), func(is string) tuple.Subspace { return root.Sub("old", is) }, clk, nil)
	// Another handle type over the same data (kv.WithFaults with no fault).
	dst := openSide(t, raw, root.Sub("q"), func(is string) tuple.Subspace { return root.Sub("new", is) }, clk, &kv.Faults{})
	if sameDB(src.q.db, dst.q.db) {
		t.Fatal("the handles compare equal; the test needs two")
	}
	r := newMoveRun(t, clk)
	ids := enqueueN(t, src.truth, "acme", 50, true)
	if _, err := src.q.MoveTenant(r.ctx, "acme", dst.q, MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if info, err := dst.q.Get(r.ctx, ids[7]); err != nil || info.ItemSpace != "acme" {
		t.Fatalf("Get after the move: %+v, %v", info, err)
	}
	if h, err := dst.q.UniqueHolder(r.ctx, "email", "acme-u10"); err != nil || h != ids[10] {
		t.Fatalf("unique key after the move: %s, %v", h, err)
	}
	// And a move onto its own zone through another handle is refused.
	same := openSide(t, raw, root.Sub("q"), func(is string) tuple.Subspace { return root.Sub("new", is) }, clk, &kv.Faults{})
	if _, err := dst.truth.MoveTenant(r.ctx, "acme", same.q, MoveOptions{}); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("move onto the same zone: %v, want ErrInvalidOption", err)
	}
	if ops, err := dst.truth.TenantOps(r.ctx, 0); err != nil || len(ops) != 0 {
		t.Fatalf("a refused move left %+v, %v", ops, err)
	}
	clk.Advance(time.Second)
	r.drain(dst.q)
	r.check(ids)
}

// shortMoveSetup opens two memkv queues in short-job mode on one fake
// clock, enqueues 30 jobs of tenant acme at the first and claims up to 5
// as short-job hand-outs, marked as leased at the fence.
func shortMoveSetup(t *testing.T) (src, dst *Queue, r *moveRun, ids []ID, held []Lease) {
	clk := clock.NewFake(zepoch)
	a, sa := fdbtest.OpenMem(t, memkv.Options{})
	b, sb := fdbtest.OpenMem(t, memkv.Options{})
	open := func(db kv.Database, space tuple.Subspace) *Queue {
		q, err := Open(context.Background(), db, space, Options{Clock: clk, TaskTypes: map[string]TaskTypeOptions{"email": {ShortJobs: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	src, dst = open(a, sa), open(b, sb)
	r = newMoveRun(t, clk)
	ids = enqueueN(t, src, "acme", 30, false)
	clk.Advance(time.Second)
	held = r.claim(src, 5)
	if len(held) == 0 || !held[0].Short() {
		t.Fatalf("claimed %+v; want short-job leases", held)
	}
	for _, l := range held {
		r.fenced[l.ID] = true
	}
	return src, dst, r, ids, held
}
