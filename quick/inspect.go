package quick

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Inspection of the zones: the pointer index, the tenants with the
// most ready work, one tenant's queue. Every call is bounded by its options,
// whatever the number of tenants or the backlog: nothing keeps a count per
// tenant (it would cost a mutation per job on the hot path), so counts come
// from capped range reads and say when the cap cut them short.

// Cursor kinds of the zones listings (cursor.go has the others).
const (
	cursorPointers byte = 'p'
	cursorZoneJobs byte = 'z'
)

// maxInspectLimit bounds a page of any zones listing.
const maxInspectLimit = 1000

// PointerInfo is one entry of a task type's pointer index, with the lane
// state it names.
type PointerInfo struct {
	TaskType  string
	Priority  Priority
	ItemSpace string
	Lane      int
	// NextVest is when the lane next has work (the pointer's time): for a
	// pointer written already vested, the start of the second it was
	// written for (pointer.go, pointerMs); for a leased lane the lease's
	// deadline.
	NextVest time.Time
	// Vested is NextVest <= now: a worker may take the lane.
	Vested bool
	// Leased says a worker holds the lane (Holder) until LeasedUntil.
	Leased      bool
	Holder      string
	LeasedUntil time.Time
	// Short says the holder runs the lane in short-job mode.
	Short bool
	// Stale says the lane state names another pointer (or none): this entry
	// is a leftover the next claim that picks it removes.
	Stale bool
}

// PointersOptions select a page of the pointer index.
type PointersOptions struct {
	TaskType string
	// Limit is the most entries returned; default 100, at most 1,000.
	Limit int
	// Cursor resumes a listing: pass the previous page's Next.
	Cursor Cursor
}

// PointerPage is a page of the pointer index.
type PointerPage struct {
	Pointers []PointerInfo
	// Next resumes the listing; empty at the end.
	Next Cursor
}

func inspectLimit(n, def int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxInspectLimit)
}

// Pointers lists a task type's pointer index in its order: priority, then
// when each lane next has work (to the second once vested), then a hash of
// zone and lane. Each entry shows its lane state (leased by whom, until
// when).
//
// Keys: one snapshot range read of S (2, "p", type) (Limit+1 entries) and a
// snapshot point read of each entry's lane state Z (1, prio, lane).
func (q *Queue) Pointers(ctx context.Context, opts PointersOptions) (PointerPage, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return PointerPage{}, err
	}
	limit := inspectLimit(opts.Limit, 100)
	space := q.zk.ptr.Sub(opts.TaskType)
	prefix := space.Bytes()
	after, err := opts.Cursor.key(cursorPointers, opts.TaskType, prefix)
	if err != nil {
		return PointerPage{}, err
	}
	var page PointerPage
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		page = PointerPage{}
		snap := tr.Snapshot()
		r := rangeOf(space)
		if after != nil {
			if string(after) >= string(r.End) {
				return nil
			}
			r.Begin = kv.KeyAfter(after)
		}
		kvs, err := snap.GetRange(r, kv.RangeOptions{Limit: limit + 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > limit {
			kvs = kvs[:limit]
			page.Next = makeCursor(cursorPointers, opts.TaskType, prefix, kvs[limit-1].Key)
		}
		entries := make([]pointerEntry, 0, len(kvs))
		for _, p := range kvs {
			e, perr := q.zk.parsePointer(p)
			if perr != nil {
				continue // a claim that meets it quarantines it
			}
			entries = append(entries, e)
		}
		states := make([]kv.Future[[]byte], len(entries))
		for i, e := range entries {
			states[i] = snap.Get(e.lane().stateKey())
		}
		nowMs := q.Now().UnixMilli()
		for i, e := range entries {
			v, err := states[i].Get()
			if err != nil {
				return err
			}
			page.Pointers = append(page.Pointers, pointerInfo(e, v, nowMs))
		}
		return nil
	})
	if err != nil {
		return PointerPage{}, fmt.Errorf("quick: pointers %s: %w", opts.TaskType, err)
	}
	return page, nil
}

// pointerInfo describes a pointer entry with its lane state's value (nil
// when missing).
func pointerInfo(e pointerEntry, state []byte, nowMs int64) PointerInfo {
	p := PointerInfo{
		TaskType: e.TaskType, Priority: e.Priority, ItemSpace: e.Value.ItemSpace, Lane: e.Lane,
		NextVest: time.UnixMilli(e.PtrMs), Vested: e.PtrMs <= nowMs, Stale: true,
	}
	var s laneState
	if state != nil && s.unmarshal(state) == nil && s.PtrMs == e.PtrMs {
		p.Stale = false
		if s.leased() {
			p.Leased, p.Holder, p.LeasedUntil, p.Short = true, s.Holder, time.UnixMilli(s.PtrMs), s.Short
		}
	}
	return p
}

// TenantReady is one tenant's ready work in ReadyTenants' sample.
type TenantReady struct {
	ItemSpace string
	// Ready counts the vested job keys of the tenant's sampled lanes; a
	// lane's count stops at CountCap (Exact is then false).
	Ready int
	Exact bool
	// Lanes is how many of the tenant's lanes the sample held.
	Lanes int
	// OldestReady is when the tenant's longest-waiting sampled job vested.
	OldestReady time.Time
}

// ReadyTenantsOptions shape ReadyTenants.
type ReadyTenantsOptions struct {
	TaskType string
	// Limit is how many vested pointers (lanes) are sampled; default 20, at
	// most 1,000.
	Limit int
	// CountCap bounds the keys counted in each sampled lane; default 1,000,
	// at most 10,000.
	CountCap int
}

// ReadyTenants returns the tenants with the most ready work of a task type,
// most first (then oldest first), from a bounded sample: the first Limit
// vested entries of the pointer index (the lanes that have waited longest,
// to the second, across priorities), each lane's vested keys counted up to CountCap, summed
// per tenant. It is not a global ranking: a tenant whose lanes are all
// leased, or vested later than the first Limit, is not in it. A global one
// would need a counter per tenant, kept by every enqueue, claim and
// completion (a mutation per job, and a hot key per busy tenant), or a scan
// proportional to the number of tenants; the sample costs Limit+3 range
// reads whatever the queue holds.
//
// Keys: snapshot range reads of S (2, "p", type, prio) up to now (Limit
// each, three priorities), then one snapshot range read per sampled lane of
// its keys vested by now (CountCap+1). At most Limit × (CountCap+1) job keys
// are read, each with its value (inline payloads up to InlinePayload bytes).
func (q *Queue) ReadyTenants(ctx context.Context, opts ReadyTenantsOptions) ([]TenantReady, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return nil, err
	}
	limit := inspectLimit(opts.Limit, 20)
	countCap := opts.CountCap
	if countCap <= 0 {
		countCap = 1000
	}
	countCap = min(countCap, 10_000)
	var out []TenantReady
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = nil
		nowMs := q.Now().UnixMilli()
		snap := tr.Snapshot()
		var reads [numPriorities]kv.RangeResult
		for i, prio := range priorities {
			reads[i] = snap.GetRange(q.zk.pointersUntil(opts.TaskType, prio, nowMs+1), kv.RangeOptions{Limit: limit})
		}
		var vested []pointerEntry
		for i := range priorities {
			kvs, err := reads[i].GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range kvs {
				if e, perr := q.zk.parsePointer(p); perr == nil {
					vested = append(vested, e)
				}
			}
		}
		slices.SortStableFunc(vested, func(a, b pointerEntry) int { return cmp.Compare(a.PtrMs, b.PtrMs) })
		vested = vested[:min(len(vested), limit)]
		lanes := make([]kv.RangeResult, len(vested))
		for i, e := range vested {
			l := e.lane()
			r := l.laneRange()
			r.End = l.z.space.Pack(tuple.Tuple{int64(zJobs), int64(l.prio), int64(l.lane), nowMs + 1})
			lanes[i] = snap.GetRange(r, kv.RangeOptions{Limit: countCap + 1})
		}
		byTenant := map[string]*TenantReady{}
		for i, e := range vested {
			kvs, err := lanes[i].GetSliceWithError()
			if err != nil {
				return err
			}
			t := byTenant[e.Value.ItemSpace]
			if t == nil {
				t = &TenantReady{ItemSpace: e.Value.ItemSpace, Exact: true}
				byTenant[e.Value.ItemSpace] = t
			}
			t.Lanes++
			if len(kvs) > countCap {
				kvs, t.Exact = kvs[:countCap], false
			}
			t.Ready += len(kvs)
			if len(kvs) > 0 {
				if jk, perr := e.lane().z.parseJobKey(kvs[0].Key); perr == nil {
					if vt := time.UnixMilli(jk.VestMs); t.OldestReady.IsZero() || vt.Before(t.OldestReady) {
						t.OldestReady = vt
					}
				}
			}
		}
		for _, t := range byTenant {
			if t.Ready > 0 {
				out = append(out, *t)
			}
		}
		slices.SortFunc(out, func(a, b TenantReady) int {
			return cmp.Or(cmp.Compare(b.Ready, a.Ready), a.OldestReady.Compare(b.OldestReady), cmp.Compare(a.ItemSpace, b.ItemSpace))
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quick: ready tenants %s: %w", opts.TaskType, err)
	}
	return out, nil
}

// ZoneJobsOptions select a page of one tenant's queue.
type ZoneJobsOptions struct {
	TaskType  string
	ItemSpace string
	// Limit is the most jobs returned; default 100, at most 1,000.
	Limit int
	// Cursor resumes a listing: pass the previous page's Next.
	Cursor Cursor
}

// ZoneJobs lists the jobs of one zone (a tenant's queue of a task type) in
// key order: priority, lane, vesting time, with their state. Payloads are
// not read.
//
// Keys: one snapshot range read of Z (0) (Limit+1 keys).
func (q *Queue) ZoneJobs(ctx context.Context, opts ZoneJobsOptions) (JobPage, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return JobPage{}, err
	}
	limit := inspectLimit(opts.Limit, 100)
	z := q.zoneOf(opts.TaskType, opts.ItemSpace)
	r := z.jobs()
	prefix := z.space.Sub(int64(zJobs)).Bytes()
	// The cursor names the zone: the task type and the tenant.
	name := opts.TaskType + "\x00" + opts.ItemSpace
	after, err := opts.Cursor.key(cursorZoneJobs, name, prefix)
	if err != nil {
		return JobPage{}, err
	}
	if after != nil {
		if string(after) >= string(r.End) {
			return JobPage{}, nil
		}
		r.Begin = kv.KeyAfter(after)
	}
	var page JobPage
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		page = JobPage{}
		kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: limit + 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > limit {
			kvs = kvs[:limit]
			page.Next = makeCursor(cursorZoneJobs, name, prefix, kvs[limit-1].Key)
		}
		nowMs := q.Now().UnixMilli()
		for _, p := range kvs {
			jk, err := z.parseJobKey(p.Key)
			if err != nil {
				continue
			}
			var v zjobValue
			if v.unmarshal(p.Value) != nil {
				continue
			}
			l := laneRef{z: z, prio: jk.Priority, lane: jk.Lane}
			page.Jobs = append(page.Jobs, zinfo(l, jk, &v, nil, nowMs))
		}
		return nil
	})
	if err != nil {
		return JobPage{}, fmt.Errorf("quick: zone jobs %s/%q: %w", opts.TaskType, opts.ItemSpace, err)
	}
	return page, nil
}

// ZoneLaneInfo is one lane of a zone at one priority.
type ZoneLaneInfo struct {
	Priority Priority
	Lane     int
	// NextVest is the lane's pointer time (the lease deadline when leased).
	NextVest time.Time
	// PointerMissing says no pointer entry is at NextVest: the invariant
	// is broken and the lane's jobs may not be found by workers.
	PointerMissing bool
	Leased         bool
	Holder         string
	Short          bool
	// Counts of the lane's jobs by state, from a read of at most Cap keys;
	// Exact is false when the lane holds more.
	ReadyJobs, LeasedJobs, ScheduledJobs int
	Exact                                bool
	// OldestReady is when the lane's longest-waiting ready job vested.
	OldestReady time.Time
}

// ZoneInfo describes one zone (a tenant's queue of a task type).
type ZoneInfo struct {
	TaskType  string
	ItemSpace string
	// Lanes is how many lanes new jobs are spread over (the zone meta, or
	// Options.ZoneLanes when the zone has none).
	Lanes int
	// LaneStates lists each lane that has a lane state (every lane holding
	// jobs, and leased ones), in priority then lane order.
	LaneStates []ZoneLaneInfo
	// Cap is how many keys were counted at most in each lane.
	Cap int
}

// zoneInfoBudget bounds the job keys ZoneInfo reads in all: each lane gets
// an equal share, at least zoneInfoMinCap.
const (
	zoneInfoBudget = 10_000
	zoneInfoMinCap = 16
)

// ZoneInfo reads one zone's meta and lane states and counts each lane's
// keys, within a budget of about 10,000 keys shared by its lanes (at least
// 16 each).
//
// Keys: snapshot reads of Z (2) and the range Z (1) (at most 3 × 1,024 lane
// states by construction), then for each lane state its pointer entry and
// one range read of its keys (Cap+1).
func (q *Queue) ZoneInfo(ctx context.Context, taskType, itemSpace string) (ZoneInfo, error) {
	if err := validTaskType(taskType); err != nil {
		return ZoneInfo{}, err
	}
	z := q.zoneOf(taskType, itemSpace)
	var info ZoneInfo
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		info = ZoneInfo{TaskType: taskType, ItemSpace: itemSpace, Lanes: q.opts.ZoneLanes}
		snap := tr.Snapshot()
		mf := snap.Get(z.metaKey())
		sf := snap.GetRange(rangeOf(z.space.Sub(int64(zLane))), kv.RangeOptions{Limit: numPriorities * (maxZoneLanes + 1)})
		mv, err := mf.Get()
		if err != nil {
			return err
		}
		if mv != nil {
			var m zoneMeta
			if m.unmarshal(mv) == nil && m.Lanes > 0 {
				info.Lanes = int(m.Lanes)
			}
		}
		kvs, err := sf.GetSliceWithError()
		if err != nil {
			return err
		}
		type laneRead struct {
			l    laneRef
			s    laneState
			ptr  kv.Future[[]byte]
			keys kv.RangeResult
		}
		var reads []laneRead
		for _, p := range kvs {
			t, err := z.space.Unpack(p.Key)
			if err != nil || len(t) != 3 {
				continue
			}
			prio, ok1 := t[1].(int64)
			lane, ok2 := t[2].(int64)
			var s laneState
			if !ok1 || !ok2 || lane < 0 || lane > maxZoneLanes || s.unmarshal(p.Value) != nil {
				continue
			}
			reads = append(reads, laneRead{l: laneRef{z: z, prio: Priority(prio), lane: int(lane)}, s: s})
		}
		info.Cap = max(zoneInfoBudget/max(len(reads), 1), zoneInfoMinCap)
		for i := range reads {
			rd := &reads[i]
			rd.ptr = snap.Get(q.pointerKeyOf(rd.l, rd.s.PtrMs))
			rd.keys = snap.GetRange(rd.l.laneRange(), kv.RangeOptions{Limit: info.Cap + 1})
		}
		nowMs := q.Now().UnixMilli()
		for _, rd := range reads {
			li := ZoneLaneInfo{
				Priority: rd.l.prio, Lane: rd.l.lane, NextVest: time.UnixMilli(rd.s.PtrMs),
				Leased: rd.s.leased(), Holder: rd.s.Holder, Short: rd.s.Short, Exact: true,
			}
			pv, err := rd.ptr.Get()
			if err != nil {
				return err
			}
			li.PointerMissing = pv == nil
			keys, err := rd.keys.GetSliceWithError()
			if err != nil {
				return err
			}
			if len(keys) > info.Cap {
				keys, li.Exact = keys[:info.Cap], false
			}
			c := countJobs(z, keys, nowMs)
			li.ReadyJobs, li.LeasedJobs, li.ScheduledJobs, li.OldestReady = c.ready, c.leased, c.scheduled, c.oldestReady
			info.LaneStates = append(info.LaneStates, li)
		}
		return nil
	})
	if err != nil {
		return ZoneInfo{}, fmt.Errorf("quick: zone %s/%q: %w", taskType, itemSpace, err)
	}
	return info, nil
}
