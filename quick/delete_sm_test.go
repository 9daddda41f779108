package quick

import (
	"bytes"
	"context"
	"errors"

	"pgregory.net/rapid"

	"github.com/quickfdb/quickfdb/kv"
)

// Deleting a tenant in the zones state machine (issue 24).
//
// The "delete" step deletes a busy tenant (one holding leased jobs if
// any, else pending ones) under the commit faults, with claims and acks at
// the model's queue after each of the deletion's batches; it may be
// interrupted (its context cancelled after a batch) and is then resumed.
// Throughout, no claim takes a job of the tenant (the fence), and an ack
// of a lease taken before the deletion either succeeds (the job was not
// deleted yet: it completes) or fails with ErrLeaseLost. After it the
// model drops the tenant's pending jobs, and the step checks that no key
// of the tenant is left: its zone, pointers naming the zone, the lookup
// index entries and unique keys of its jobs, its limits (override and
// running state) and the operation's record; an ack of every lease taken
// before the deletion then fails with ErrLeaseLost. Its dead letters stay,
// which the checks after the step verify with every other job.

// deleteTenant is the "delete" step.
func (m *zModel) deleteTenant(rt *rapid.T) {
	tenant := rapid.SampledFrom(m.busyTenants()).Draw(rt, "tenant")
	before := map[ID]uint64{}
	var leases []zmHeld
	for _, id := range m.order {
		if j := m.jobs[id]; j.tenant == tenant && j.state == zmPending && j.leased {
			before[id] = j.token
		}
	}
	for _, h := range m.held {
		if h.lease.ItemSpace == tenant && m.current(h) {
			leases = append(leases, h)
		}
	}
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	stopAt := rapid.IntRange(0, 6).Draw(rt, "interrupt") // 0: never
	batches := 0
	opts := DeleteOptions{TaskType: zsmType, Batch: rapid.IntRange(1, 8).Draw(rt, "batch"), afterBatch: func() error {
		batches++
		m.duringDelete(rt, tenant, before)
		if batches == stopAt {
			cancel()
		}
		return nil
	}}
	_, err := m.q.DeleteTenant(ctx, tenant, opts)
	if err != nil && errors.Is(err, context.Canceled) && stopAt > 0 {
		m.mv.Interrupted++
		m.duringDelete(rt, tenant, before)
		_, err = m.q.DeleteTenant(m.ctx, tenant, opts)
	}
	if err != nil {
		rt.Fatalf("delete %q: %v", tenant, err)
	}
	var dropped []*zmJob
	for _, id := range m.order {
		if j := m.jobs[id]; j.tenant == tenant && j.state == zmPending {
			j.state, j.leased = zmDone, false
			dropped = append(dropped, j)
		}
	}
	delete(m.limits, tenant)
	m.mv.Deletes++
	m.mv.Deleted += int64(len(dropped))
	m.checkDeleted(rt, tenant, dropped)
	for _, h := range leases {
		i := -1
		for k, o := range m.held {
			if o.lease.ID == h.lease.ID && leaseTokenEq(o.lease, h.lease) {
				i = k
			}
		}
		if i < 0 {
			continue // acked during the deletion
		}
		acks, err := m.q.Ack(m.ctx, Ack{Lease: h.lease, Kind: AckComplete})
		if len(acks) != 1 {
			rt.Fatalf("complete after the delete: %v", err)
		}
		if !IsLeaseLost(acks[0].Err) {
			rt.Fatalf("complete of %s under a lease taken before its tenant was deleted: %v, want ErrLeaseLost", h.lease.ID, acks[0].Err)
		}
		m.dropHeld(i)
	}
}

// leaseTokenEq says whether two leases of a job are one.
func leaseTokenEq(a, b Lease) bool { return a.token() == b.token() && a.Holder == b.Holder }

// duringDelete claims at the model's queue, which must take no job of the
// tenant being deleted, and completes a lease of it taken before the
// deletion: done if its job was not deleted yet, else ErrLeaseLost.
func (m *zModel) duringDelete(rt *rapid.T, tenant string, before map[ID]uint64) {
	m.claimDuring(rt, "deletion", "delworker", tenant, false, before)
}

// claimDuring claims at the model's queue while an operation on tenant (a
// deletion or a move, what) is in flight, failing if it takes a job of the
// tenant unless mayClaim, and then completes one lease of the tenant taken
// before the operation started (before holds the tokens then). It reports
// whether that ack found its lease lost. label names the worker's draw.
func (m *zModel) claimDuring(rt *rapid.T, what, label, tenant string, mayClaim bool, before map[ID]uint64) (lost bool) {
	worker := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(rt, label)
	m.claimFrom = m.clk.Now()
	res, err := m.q.Consumer().Claim(m.ctx, ClaimOptions{TaskType: zsmType, Holder: worker, Max: 5, Lease: zsmLease, Peek: 64})
	if err != nil {
		rt.Fatalf("claim during the %s of %q: %v", what, tenant, err)
	}
	for _, l := range res.Jobs {
		if l.ItemSpace == tenant && !mayClaim {
			rt.Fatalf("claimed %s of %q during its %s", l.ID, tenant, what)
		}
	}
	m.took(rt, worker, res, 5)
	for i, h := range m.held {
		if h.lease.ItemSpace != tenant || before[h.lease.ID] != m.jobs[h.lease.ID].token || !m.current(h) {
			continue
		}
		now := m.clk.Now()
		acks, err := m.q.Ack(m.ctx, Ack{Lease: h.lease, Kind: AckComplete})
		if len(acks) != 1 {
			rt.Fatalf("complete during the %s: %v", what, err)
		}
		m.dropHeld(i)
		if IsLeaseLost(acks[0].Err) {
			return true // deleted, or fenced or copied by a move
		}
		m.acked(rt, h, true, AckComplete, acks[0], now)
		return false
	}
	return false
}

// checkDeleted checks that no key of a deleted tenant is left: dropped
// are its jobs the deletion removed.
func (m *zModel) checkDeleted(rt *rapid.T, tenant string, dropped []*zmJob) {
	z := m.truth.zoneOf(zsmType, tenant)
	err := m.raw.ReadTransact(m.ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(rangeOf(z.space), kv.RangeOptions{Limit: 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > 0 {
			rt.Fatalf("tenant %.8q deleted, but a key of its zone is left: %x", tenant, kvs[0].Key)
		}
		ptrs, err := tr.GetRange(rangeOf(m.truth.zk.ptr.Sub(zsmType)), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range ptrs {
			if bytes.Contains(p.Value, z.space.Bytes()) {
				rt.Fatalf("tenant %.8q deleted, but a pointer of its zone is left: %x", tenant, p.Key)
			}
		}
		for _, j := range dropped {
			if v, err := tr.Get(m.truth.zk.indexKey(j.id)).Get(); err != nil || v != nil {
				rt.Fatalf("tenant %.8q deleted, but the lookup index entry of its job %s is left (%v)", tenant, j.id, err)
			}
			if j.unique == "" {
				continue
			}
			if v, err := tr.Get(m.truth.k.uniqKey(zsmType, j.unique)).Get(); err != nil || bytes.Equal(v, j.id[:]) {
				rt.Fatalf("tenant %.8q deleted, but the unique key of its job %s is left (%v)", tenant, j.id, err)
			}
		}
		for _, k := range [][]byte{m.truth.k.tenantLimitKey(zsmType, tenant), m.truth.k.moveKey(tenant, zsmType)} {
			if v, err := tr.Get(k).Get(); err != nil || v != nil {
				rt.Fatalf("tenant %.8q deleted, but its key %x is left (%v)", tenant, k, err)
			}
		}
		st, err := tr.GetRange(rangeOf(m.truth.k.limitState(zsmType, tenant)), kv.RangeOptions{Limit: 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(st) > 0 {
			rt.Fatalf("tenant %.8q deleted, but its limits state is left: %x", tenant, st[0].Key)
		}
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
}
