package quick

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// tenantQueue opens a zones queue under space whose tenants' zones live
// under tenants.Sub(itemSpace) (Options.ZoneSpace).
func tenantQueue(t *testing.T, db kv.Database, space, tenants tuple.Subspace, clk clock.Clock) *Queue {
	t.Helper()
	q, err := Open(context.Background(), db, space, Options{
		ZoneLanes: 1, Clock: clk,
		ZoneSpace: func(itemSpace string) tuple.Subspace { return tenants.Sub(itemSpace) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Issue 22, item 3: a lane state that exists without its pointer (here a
// tenant's subspace copied into another queue, which the pointer index is
// not part of) is repaired by the next enqueue into the lane, never
// trusted: the copied jobs and the new ones are all claimable.
func TestZoneCoverRepairsALaneStateWithoutItsPointer(t *testing.T) {
	raw, root := fdbtest.Open(t)
	ctx := context.Background()
	clk := clock.NewFake(zepoch)
	srcTenants, dstTenants := root.Sub("src-tenants"), root.Sub("dst-tenants")
	src := tenantQueue(t, raw, root.Sub("src"), srcTenants, clk)
	dst := tenantQueue(t, raw, root.Sub("dst"), dstTenants, clk)
	copied, err := src.Enqueue(ctx, NewJob{TaskType: "email", ItemSpace: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	// Copy the tenant's subspace, byte for byte, under the other queue's
	// tenant space.
	from, to := srcTenants.Sub("acme"), dstTenants.Sub("acme")
	err = raw.Transact(ctx, func(tr kv.Transaction) error {
		kvs, err := tr.GetRange(rangeOf(from), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, kvp := range kvs {
			tr.Set(append(bytes.Clone(to.Bytes()), kvp.Key[len(from.Bytes()):]...), kvp.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	added, err := dst.Enqueue(ctx, NewJob{TaskType: "email", ItemSpace: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	got := map[ID]bool{}
	for range 3 {
		res, err := dst.Consumer().Claim(ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range res.Jobs {
			got[l.ID] = true
		}
	}
	if !got[copied[0].ID] || !got[added[0].ID] {
		t.Fatalf("claimed %v from the copy; want the copied job %s and the one enqueued after %s", got, copied[0].ID, added[0].ID)
	}
}

// Issue 22, surviving break: Options.ZoneSpace ignored, every zone under
// the queue's own subspace. The job must be found by raw key in the
// tenant's own subspace, not through the placement function.
func TestZoneSpacePlacesJobsInTheTenantsSubspace(t *testing.T) {
	raw, root := fdbtest.Open(t)
	ctx := context.Background()
	tenants := root.Sub("tenants")
	q := tenantQueue(t, raw, root.Sub("queue"), tenants, clock.NewFake(zepoch))
	res, err := q.Enqueue(ctx, NewJob{TaskType: "email", ItemSpace: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	prefix := tenants.Sub("acme").Bytes()
	found := false
	err = raw.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: prefix, End: append(bytes.Clone(prefix), 0xff)}, kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		id := res[0].ID
		for _, kvp := range kvs {
			if bytes.Contains(kvp.Key, id[:]) {
				found = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no key of job %s under the tenant's subspace %x", res[0].ID, prefix)
	}
}
