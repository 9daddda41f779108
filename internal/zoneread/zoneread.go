// Package zoneread is a stand-in, for the console and the CLI, of three
// surfaces issue 21 adds to the library: quick.Queue.Depth, quick.Queue.List
// across a task type's zones and worker.ListWorkers. Its types and options
// have the fields the library's will have (docs: the session's API
// contract), so that swapping is a rename: zoneread.Read(ctx, q, o) becomes
// q.Depth(ctx, o), zoneread.List becomes q.List, zoneread.ListWorkers becomes
// worker.ListWorkers. Delete the package when they land.
//
// It is built on the zones inspection the library has today (Pointers,
// ZoneInfo, ZoneJobs) and the lanes registry, every call bounded by its
// options.
package zoneread

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
)

// DepthOptions shape Depth.
type DepthOptions struct {
	TaskType string
	// ItemSpaces limits the count to these tenants; nil: every tenant.
	ItemSpaces []string
	// Budget bounds the keys read; default 10,000.
	Budget int
	// TopTenants is how many tenants Depth.Tenants holds; default 20.
	TopTenants int
}

// Depth is one task type's jobs by state, with its top tenants by ready work.
type Depth struct {
	TaskType                 string
	Ready, Leased, Scheduled int
	Dead                     int64
	OldestReady              time.Time
	// Exact is false when a bound cut the count short: the counts are then
	// lower bounds.
	Exact bool
	// Tenants are the tenants with the most ready work, most first.
	Tenants []TenantDepth
	// TenantsExact is false when some tenants were not read.
	TenantsExact bool
}

// TenantDepth is one tenant's (one zone's) jobs by state.
type TenantDepth struct {
	ItemSpace                string
	Ready, Leased, Scheduled int
	OldestReady              time.Time
	// Lanes is how many lanes the zone spreads new jobs over.
	Lanes int
	Exact bool
}

// maxTenants bounds the zones one Depth call reads.
const maxTenants = 200

// tenantsOf returns the tenants whose zones hold jobs of a task type, in
// the pointer index's order of first appearance, from at most maxEntries
// entries of the index; complete says the walk reached the end.
func tenantsOf(ctx context.Context, q *quick.Queue, taskType string, maxEntries int) (tenants []string, complete bool, err error) {
	seen := map[string]bool{}
	var cur quick.Cursor
	read := 0
	for read < maxEntries {
		page, err := q.Pointers(ctx, quick.PointersOptions{TaskType: taskType, Limit: min(1000, maxEntries-read), Cursor: cur})
		if err != nil {
			return nil, false, err
		}
		read += len(page.Pointers)
		for _, p := range page.Pointers {
			if !seen[p.ItemSpace] {
				seen[p.ItemSpace] = true
				tenants = append(tenants, p.ItemSpace)
			}
		}
		if page.Next == "" {
			return tenants, true, nil
		}
		cur = page.Next
	}
	return tenants, false, nil
}

// Read counts a task type's jobs by state (quick.Queue.Depth to be): the tenants from the pointer
// index (every lane holding jobs has an entry), then each tenant's zone
// (quick.Queue.ZoneInfo), until Budget keys, and the dead letters' counter.
func Read(ctx context.Context, q *quick.Queue, o DepthOptions) (Depth, error) {
	if o.Budget <= 0 {
		o.Budget = 10_000
	}
	if o.TopTenants <= 0 {
		o.TopTenants = 20
	}
	d := Depth{TaskType: o.TaskType, Exact: true, TenantsExact: true}
	tenants := o.ItemSpaces
	if tenants == nil {
		var complete bool
		var err error
		if tenants, complete, err = tenantsOf(ctx, q, o.TaskType, min(o.Budget, 5000)); err != nil {
			return Depth{}, err
		}
		if !complete {
			d.Exact, d.TenantsExact = false, false
		}
	}
	if len(tenants) > maxTenants {
		tenants, d.Exact, d.TenantsExact = tenants[:maxTenants], false, false
	}
	keys := 0
	for i, t := range tenants {
		if keys >= o.Budget {
			d.Exact, d.TenantsExact = false, false
			tenants = tenants[:i]
			break
		}
		info, err := q.ZoneInfo(ctx, o.TaskType, t)
		if err != nil {
			return Depth{}, err
		}
		td := TenantDepth{ItemSpace: t, Lanes: info.Lanes, Exact: true}
		for _, l := range info.LaneStates {
			td.Ready += l.ReadyJobs
			td.Leased += l.LeasedJobs
			td.Scheduled += l.ScheduledJobs
			td.Exact = td.Exact && l.Exact
			if !l.OldestReady.IsZero() && (td.OldestReady.IsZero() || l.OldestReady.Before(td.OldestReady)) {
				td.OldestReady = l.OldestReady
			}
		}
		keys += td.Ready + td.Leased + td.Scheduled + len(info.LaneStates)
		d.Ready += td.Ready
		d.Leased += td.Leased
		d.Scheduled += td.Scheduled
		d.Exact = d.Exact && td.Exact
		if !td.OldestReady.IsZero() && (d.OldestReady.IsZero() || td.OldestReady.Before(d.OldestReady)) {
			d.OldestReady = td.OldestReady
		}
		if td.Ready+td.Leased+td.Scheduled > 0 {
			d.Tenants = append(d.Tenants, td)
		}
	}
	slices.SortFunc(d.Tenants, func(a, b TenantDepth) int {
		return cmp.Or(cmp.Compare(b.Ready, a.Ready), a.OldestReady.Compare(b.OldestReady),
			cmp.Compare(b.Leased+b.Scheduled, a.Leased+a.Scheduled), strings.Compare(a.ItemSpace, b.ItemSpace))
	})
	if len(d.Tenants) > o.TopTenants {
		d.Tenants = d.Tenants[:o.TopTenants]
	}
	dead, err := q.DeadCount(ctx, o.TaskType)
	if err != nil {
		return Depth{}, err
	}
	d.Dead = dead
	return d, nil
}

// ListOptions select a page of a task type's live jobs across its zones.
type ListOptions struct {
	TaskType string
	// ItemSpaces limits the listing to these tenants; nil: every tenant.
	ItemSpaces []string
	// State filters by state (scheduled, ready or leased); zero: all.
	State quick.State
	// Limit is the most jobs returned; default 100, at most 1,000.
	Limit int
	// After resumes a listing: the previous page's Next.
	After quick.Cursor
}

// errCursor wraps quick.ErrInvalidCursor for a cursor List did not make.
var errCursor = fmt.Errorf("%w: not a cursor of this listing", quick.ErrInvalidCursor)

// List lists a task type's jobs tenant by tenant (in name order), each
// tenant's in its zone's key order. The cursor is the tenant and the
// zone's own cursor.
func List(ctx context.Context, q *quick.Queue, o ListOptions) (quick.JobPage, error) {
	if o.Limit <= 0 {
		o.Limit = 100
	}
	o.Limit = min(o.Limit, 1000)
	tenants := slices.Clone(o.ItemSpaces)
	if tenants == nil {
		var err error
		if tenants, _, err = tenantsOf(ctx, q, o.TaskType, 5000); err != nil {
			return quick.JobPage{}, err
		}
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	start, zc := 0, quick.Cursor("")
	if o.After != "" {
		th, c, ok := strings.Cut(string(o.After), ".")
		tb, herr := hex.DecodeString(strings.TrimPrefix(th, "L"))
		if !ok || !strings.HasPrefix(th, "L") || herr != nil {
			return quick.JobPage{}, errCursor
		}
		t := string(tb)
		start, _ = slices.BinarySearch(tenants, t)
		if start < len(tenants) && tenants[start] == t {
			zc = quick.Cursor(c)
		} else {
			zc = ""
		}
	}
	var page quick.JobPage
	for i := start; i < len(tenants); i++ {
		t := tenants[i]
		zp, err := q.ZoneJobs(ctx, quick.ZoneJobsOptions{TaskType: o.TaskType, ItemSpace: t, Limit: o.Limit - len(page.Jobs), Cursor: zc})
		if errors.Is(err, quick.ErrInvalidCursor) {
			return quick.JobPage{}, errCursor
		}
		if err != nil {
			return quick.JobPage{}, err
		}
		zc = ""
		for _, j := range zp.Jobs {
			if o.State == 0 || j.State == o.State {
				page.Jobs = append(page.Jobs, j)
			}
		}
		if zp.Next != "" {
			page.Next = listCursor(t, zp.Next)
			return page, nil
		}
		if len(page.Jobs) >= o.Limit {
			if i+1 < len(tenants) {
				page.Next = listCursor(tenants[i+1], "")
			}
			return page, nil
		}
	}
	return page, nil
}

// listCursor names where a listing resumes: a tenant and its zone's cursor.
func listCursor(tenant string, zone quick.Cursor) quick.Cursor {
	return quick.Cursor("L" + hex.EncodeToString([]byte(tenant)) + "." + string(zone))
}

// Presence is one worker process as the console sees it.
type Presence struct {
	ID, Process string
	TaskTypes   []string
	// Running holds jobs the worker leases, at most 64.
	Running []quick.ID
	Started time.Time
	Beat    time.Time
}

// ListWorkers returns the workers of the lanes registry (which workers of
// the zones layout join only while schema-1 jobs are left) and the holders
// of leased jobs, at most limit of them.
func ListWorkers(ctx context.Context, q *quick.Queue, limit int) ([]Presence, error) {
	if limit <= 0 {
		limit = 100
	}
	byID := map[string]*Presence{}
	get := func(id string) *Presence {
		p := byID[id]
		if p == nil {
			p = &Presence{ID: id}
			byID[id] = p
		}
		return p
	}
	reg := lanes.NewRegistry(q.DB(), q.Root().Sub("w"), lanes.Options{})
	rtypes, err := reg.TaskTypes(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the worker registry: %w", err)
	}
	for _, t := range rtypes {
		ms, err := reg.Snapshot(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("read the worker registry: %w", err)
		}
		for _, m := range ms {
			p := get(m.ID)
			p.Process = m.Info.Host
			p.TaskTypes = append(p.TaskTypes, t)
			if m.Clock.After(p.Beat) {
				p.Beat = m.Clock
			}
		}
	}
	types, err := q.TaskTypes(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		page, err := List(ctx, q, ListOptions{TaskType: t, State: quick.StateLeased, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, j := range page.Jobs {
			if j.Holder == "" {
				continue
			}
			p := get(j.Holder)
			if !slices.Contains(p.TaskTypes, t) {
				p.TaskTypes = append(p.TaskTypes, t)
			}
			if len(p.Running) < 64 {
				p.Running = append(p.Running, j.ID)
			}
		}
	}
	out := make([]Presence, 0, len(byID))
	for _, p := range byID {
		slices.Sort(p.TaskTypes)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Presence) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}
