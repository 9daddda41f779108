package quick

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Depth: how much work a task type holds, per state and per tenant. Nothing
// counts jobs as they come and go (a counter per tenant and state would
// cost a write per job on a hot key, and "ready" changes with the clock
// alone), so Depth counts job keys with bounded reads and says when the
// bound cut it short. Only the dead letters have an exact counter.

// Budgets of Depth, in keys read per call.
const (
	defaultDepthBudget = 10_000
	minDepthBudget     = 64
	maxDepthBudget     = 100_000
	// depthMinLaneCap is the fewest keys counted in each lane: the pointer
	// entries read are limited so that every lane gets at least this many.
	depthMinLaneCap = 16
	// maxDepthItemSpaces bounds DepthOptions.ItemSpaces.
	maxDepthItemSpaces = 1000
)

// DepthOptions shape Depth.
type DepthOptions struct {
	// TaskType is required.
	TaskType string
	// ItemSpaces counts only these tenants' zones (at most 1,000); nil
	// counts every tenant through the pointer index; []string{""} is the
	// zone of the jobs enqueued without an ItemSpace.
	ItemSpaces []string
	// Budget is the most keys read; default 10,000, at least 64, at most
	// 100,000.
	Budget int
	// TopTenants is how many tenants Depth.Tenants lists, the most ready
	// first; default 20, at most 1,000.
	TopTenants int
}

// Depth is a task type's work by state, and its busiest tenants.
type Depth struct {
	TaskType string
	// Ready, Leased and Scheduled count the job keys read; lower bounds
	// unless Exact.
	Ready, Leased, Scheduled int
	// Dead is the task type's dead letters, from their counter: always
	// exact, and not split by tenant.
	Dead int64
	// OldestReady is when the longest-waiting ready job counted vested
	// (zero if none).
	OldestReady time.Time
	// Exact says every job key of the task type (of ItemSpaces, when set)
	// was counted.
	Exact bool
	// Tenants are the top TopTenants tenants counted, by ready jobs (then
	// oldest ready, then name).
	Tenants []TenantDepth
	// TenantsExact says Tenants holds every tenant that has jobs, each
	// counted exactly.
	TenantsExact bool
}

// TenantDepth is one tenant's work in Depth.
type TenantDepth struct {
	ItemSpace                string
	Ready, Leased, Scheduled int
	OldestReady              time.Time
	// Lanes is how many of the tenant's lanes were counted (through the
	// pointer index; 0 when DepthOptions.ItemSpaces named the tenant, whose
	// zone is then read whole).
	Lanes int
	// Exact says every job of the tenant was counted (with ItemSpaces nil
	// it needs the whole pointer index read: a tenant may have lanes the
	// budget did not reach).
	Exact bool
	// Limits are the tenant's limits of the task type as they apply (its
	// override over the type's default; zero: none), and Running the jobs
	// holding a slot of its concurrency limit (limits.go): running against
	// Limits.Concurrency. Running is 0 without a concurrency limit.
	Limits  Limits
	Running int64
}

// Depth counts a task type's ready, leased and scheduled jobs, in all and
// for its busiest tenants, within a budget of keys read, and reads its
// dead-letter counter.
//
// With ItemSpaces nil it reads the pointer index (every lane holding jobs
// has an entry; one whose lane state names another entry is a leftover and
// is skipped), at most Budget/19 entries, in its order: priority, then the
// lanes whose work is oldest first. Then it counts each lane's job keys,
// the budget left shared equally among the lanes (at least 16 each): a
// lane's keys are in vesting order, so a cut-short count has its ready jobs
// first. With ItemSpaces set it counts those zones' job keys, the budget
// shared equally among them (at least 16 each). When the budget cuts a
// count short, Exact is false and the counts are lower bounds: a tenant
// behind the first Budget/19 lanes of the index is then not seen at all.
//
// Bound: at most Budget keys read and the dead-letter counter (with
// ItemSpaces set, at most max(Budget, 17 × len(ItemSpaces))), in two round
// trips whatever the backlog or the number of tenants, and a third for the
// listed tenants' limits (2 keys each, at most TopTenants).
//
// Keys: snapshot reads. S (1, "dn", type); every tenant: one range read of
// S (2, "p", type), a point read of each entry's lane state Z (1, prio,
// lane), one range read per lane of Z (0, prio, lane); named tenants: one
// range read per zone of Z (0). Then, for the tenants listed, their limits
// S (1, "tl", type) and S (1, "tl", type, itemSpace) and running count
// S (1, "ts", type, itemSpace, "n"): a third round trip, 2 keys per tenant
// listed.
func (q *Queue) Depth(ctx context.Context, opts DepthOptions) (Depth, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return Depth{}, err
	}
	if len(opts.ItemSpaces) > maxDepthItemSpaces {
		return Depth{}, fmt.Errorf("%w: Depth counts at most %d ItemSpaces, not %d", ErrInvalidOption, maxDepthItemSpaces, len(opts.ItemSpaces))
	}
	budget := opts.Budget
	if budget <= 0 {
		budget = defaultDepthBudget
	}
	budget = min(max(budget, minDepthBudget), maxDepthBudget)
	top := inspectLimit(opts.TopTenants, 20)
	var d Depth
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		d = Depth{TaskType: opts.TaskType}
		snap := tr.Snapshot()
		deadF := snap.Get(q.k.deadCountKey(opts.TaskType))
		var (
			counts []depthRead
			err    error
		)
		if opts.ItemSpaces != nil {
			counts, err = q.depthZones(snap, opts.TaskType, opts.ItemSpaces, budget)
		} else {
			counts, d.Exact, err = q.depthIndex(snap, opts.TaskType, budget)
		}
		if err != nil {
			return err
		}
		if opts.ItemSpaces != nil {
			d.Exact = true
		}
		dv, err := deadF.Get()
		if err != nil {
			return err
		}
		d.Dead = decodeCounter(dv)
		if err := d.add(counts, q.Now().UnixMilli(), top); err != nil {
			return err
		}
		return q.depthLimits(snap, &d)
	})
	if err != nil {
		return Depth{}, fmt.Errorf("quick: depth %s: %w", opts.TaskType, err)
	}
	return d, nil
}

// depthRead is one range read of job keys in flight: a lane, or a zone.
type depthRead struct {
	z    zone
	keys kv.RangeResult
	cap  int
	lane bool // a lane of the pointer index (counts toward TenantDepth.Lanes)
}

// depthIndex reads the pointer index and starts a read of each live lane's
// keys. complete says the index was read to its end.
func (q *Queue) depthIndex(snap kv.ReadTransaction, taskType string, budget int) ([]depthRead, bool, error) {
	// Each pointer costs its entry and its lane state, and each lane at
	// least depthMinLaneCap keys and the one past its cap; one more entry
	// past maxPtrs says whether the index goes on.
	maxPtrs := (budget - 1) / (3 + depthMinLaneCap)
	kvs, err := snap.GetRange(rangeOf(q.zk.ptr.Sub(taskType)), kv.RangeOptions{Limit: maxPtrs + 1}).GetSliceWithError()
	if err != nil {
		return nil, false, err
	}
	complete := len(kvs) <= maxPtrs
	kvs = kvs[:min(len(kvs), maxPtrs)]
	type entry struct {
		e     pointerEntry
		state kv.Future[[]byte]
	}
	var entries []entry
	for _, p := range kvs {
		if e, perr := q.zk.parsePointer(p); perr == nil {
			entries = append(entries, entry{e: e, state: snap.Get(e.lane().stateKey())})
		}
	}
	var live []pointerEntry
	for _, en := range entries {
		v, err := en.state.Get()
		if err != nil {
			return nil, false, err
		}
		if liveEntry(en.e, v) {
			live = append(live, en.e)
		}
	}
	if len(live) == 0 {
		return nil, complete, nil
	}
	laneCap := max((budget-2*len(kvs)-1)/len(live)-1, depthMinLaneCap)
	reads := make([]depthRead, len(live))
	for i, e := range live {
		l := e.lane()
		reads[i] = depthRead{z: l.z, cap: laneCap, lane: true, keys: snap.GetRange(l.laneRange(), kv.RangeOptions{Limit: laneCap + 1})}
	}
	return reads, complete, nil
}

// depthZones starts a read of each named tenant's zone.
func (q *Queue) depthZones(snap kv.ReadTransaction, taskType string, itemSpaces []string, budget int) ([]depthRead, error) {
	spaces := slices.Clone(itemSpaces)
	slices.Sort(spaces)
	spaces = slices.Compact(spaces)
	if len(spaces) == 0 {
		return nil, nil
	}
	zoneCap := max(budget/len(spaces)-1, depthMinLaneCap)
	reads := make([]depthRead, len(spaces))
	for i, s := range spaces {
		z := q.zoneOf(taskType, s)
		reads[i] = depthRead{z: z, cap: zoneCap, keys: snap.GetRange(z.jobs(), kv.RangeOptions{Limit: zoneCap + 1})}
	}
	return reads, nil
}

// add counts the reads into d, per state and per tenant, and keeps the top
// tenants.
func (d *Depth) add(reads []depthRead, nowMs int64, top int) error {
	byTenant := map[string]*TenantDepth{}
	var order []string
	allExact := true
	for _, rd := range reads {
		kvs, err := rd.keys.GetSliceWithError()
		if err != nil {
			return err
		}
		t := byTenant[rd.z.itemSpace]
		if t == nil {
			t = &TenantDepth{ItemSpace: rd.z.itemSpace, Exact: true}
			byTenant[rd.z.itemSpace] = t
			order = append(order, rd.z.itemSpace)
		}
		if rd.lane {
			t.Lanes++
		}
		if len(kvs) > rd.cap {
			kvs, t.Exact, allExact = kvs[:rd.cap], false, false
		}
		c := countJobs(rd.z, kvs, nowMs)
		t.Ready += c.ready
		t.Leased += c.leased
		t.Scheduled += c.scheduled
		if !c.oldestReady.IsZero() && (t.OldestReady.IsZero() || c.oldestReady.Before(t.OldestReady)) {
			t.OldestReady = c.oldestReady
		}
	}
	complete := d.Exact
	d.Exact = d.Exact && allExact
	for _, name := range order {
		t := byTenant[name]
		t.Exact = t.Exact && complete
		d.Ready += t.Ready
		d.Leased += t.Leased
		d.Scheduled += t.Scheduled
		if !t.OldestReady.IsZero() && (d.OldestReady.IsZero() || t.OldestReady.Before(d.OldestReady)) {
			d.OldestReady = t.OldestReady
		}
		if t.Ready+t.Leased+t.Scheduled > 0 || !t.Exact {
			d.Tenants = append(d.Tenants, *t)
		}
	}
	slices.SortFunc(d.Tenants, func(a, b TenantDepth) int {
		return cmp.Or(cmp.Compare(b.Ready, a.Ready), a.OldestReady.Compare(b.OldestReady), cmp.Compare(a.ItemSpace, b.ItemSpace))
	})
	d.TenantsExact = d.Exact && len(d.Tenants) <= top
	d.Tenants = d.Tenants[:min(len(d.Tenants), top)]
	return nil
}

// jobCounts are a lane's job keys counted by state.
type jobCounts struct {
	ready, leased, scheduled int
	oldestReady              time.Time // when the longest-waiting ready job vested
}

// countJobs counts the job keys kvs of zone z by their state at nowMs,
// passing over keys and values that do not parse (quarantine is the
// claim's business, not a count's).
func countJobs(z zone, kvs []kv.KeyValue, nowMs int64) jobCounts {
	var c jobCounts
	for _, p := range kvs {
		jk, err := z.parseJobKey(p.Key)
		if err != nil {
			continue
		}
		var v zjobValue
		if v.unmarshal(p.Value) != nil {
			continue
		}
		switch stateOf(&v, jk.VestMs, nowMs) {
		case StateReady:
			c.ready++
			if vt := time.UnixMilli(jk.VestMs); c.oldestReady.IsZero() || vt.Before(c.oldestReady) {
				c.oldestReady = vt
			}
		case StateLeased:
			c.leased++
		default:
			c.scheduled++
		}
	}
	return c
}

// depthLimits fills in the listed tenants' limits and running counts.
func (q *Queue) depthLimits(snap kv.ReadTransaction, d *Depth) error {
	if len(d.Tenants) == 0 {
		return nil
	}
	defF := snap.Get(q.k.typeLimitKey(d.TaskType))
	type reads struct{ over, running kv.Future[[]byte] }
	rs := make([]reads, len(d.Tenants))
	for i, t := range d.Tenants {
		rs[i] = reads{
			over:    snap.Get(q.k.tenantLimitKey(d.TaskType, t.ItemSpace)),
			running: snap.Get(runningKey(q.k.limitState(d.TaskType, t.ItemSpace))),
		}
	}
	dv, err := defF.Get()
	if err != nil {
		return err
	}
	var def Limits
	if dv != nil && def.unmarshal(dv) != nil {
		def = Limits{} // a corrupt default limits nothing, as claims see it
	}
	for i := range d.Tenants {
		t := &d.Tenants[i]
		ov, err := rs[i].over.Get()
		if err != nil {
			return err
		}
		rv, err := rs[i].running.Get()
		if err != nil {
			return err
		}
		t.Limits = def
		var o Limits
		if ov != nil && o.unmarshal(ov) == nil {
			t.Limits = o.over(def)
		}
		if t.Limits.concurrency() > 0 {
			t.Running = max(readLE64(rv), 0)
		}
	}
	return nil
}
