package quick

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

func TestPointersListsTheIndexInOrderWithLaneLeases(t *testing.T) {
	e := newZIEnv(t, Options{})
	now := e.clk.Now()
	// Three tenants vesting at different times, one at High priority.
	e.place(t, zijob{ItemSpace: "late", Vest: now.Add(time.Hour)})
	e.place(t, zijob{ItemSpace: "early", Vest: now.Add(-time.Minute)})
	e.place(t, zijob{ItemSpace: "urgent", Prio: High, Vest: now.Add(time.Minute)})
	page, err := e.q.Pointers(e.ctx, PointersOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range page.Pointers {
		got = append(got, fmt.Sprintf("%s/%s/%v", p.Priority, p.ItemSpace, p.Vested))
	}
	if want := fmt.Sprint([]string{"high/urgent/false", "normal/early/true", "normal/late/false"}); fmt.Sprint(got) != want {
		t.Fatalf("pointers %v, want %v", got, want)
	}
	// A worker leases the vested lane: the entry moves to its deadline and
	// shows the holder.
	if err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		p, found, _, err := e.q.acquire(tr, "email", "w1", 8, 5*time.Second, false, e.clk.Now())
		if found {
			e.q.saveHold(tr, &p) // a worker keeping the lane
		}
		if err == nil && !found {
			err = errors.New("no lane acquired")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	page, _ = e.q.Pointers(e.ctx, PointersOptions{TaskType: "email"})
	var leased *PointerInfo
	for i, p := range page.Pointers {
		if p.ItemSpace == "early" {
			leased = &page.Pointers[i]
		}
	}
	if leased == nil || !leased.Leased || leased.Holder != "w1" || !leased.LeasedUntil.Equal(now.Add(5*time.Second)) || leased.Stale {
		t.Fatalf("leased entry %+v", leased)
	}
}

func TestPointersPagesWithACursor(t *testing.T) {
	e := newZIEnv(t, Options{})
	for i := range 7 {
		e.place(t, zijob{ItemSpace: fmt.Sprintf("t%d", i), Vest: e.clk.Now().Add(time.Duration(i) * time.Second)})
	}
	var all []string
	var cur Cursor
	pages := 0
	for {
		page, err := e.q.Pointers(e.ctx, PointersOptions{TaskType: "email", Limit: 3, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, p := range page.Pointers {
			all = append(all, p.ItemSpace)
		}
		if page.Next == "" {
			break
		}
		cur = page.Next
	}
	if fmt.Sprint(all) != "[t0 t1 t2 t3 t4 t5 t6]" || pages != 3 {
		t.Fatalf("%d pages: %v", pages, all)
	}
	if _, err := e.q.Pointers(e.ctx, PointersOptions{TaskType: "sms", Cursor: cur}); !errors.Is(err, ErrInvalidCursor) {
		t.Fatalf("another type's cursor: %v", err)
	}
}

func TestReadyTenantsSamplesTheFirstVestedLanes(t *testing.T) {
	e := newZIEnv(t, Options{})
	now := e.clk.Now()
	for range 30 {
		e.place(t, zijob{ItemSpace: "big", Vest: now.Add(-time.Minute)})
	}
	for i := range 3 {
		e.place(t, zijob{ItemSpace: fmt.Sprintf("small%d", i), Vest: now.Add(-time.Duration(i+1) * time.Second)})
	}
	e.place(t, zijob{ItemSpace: "big", Vest: now.Add(time.Hour)}) // not ready: not counted
	e.place(t, zijob{ItemSpace: "future", Vest: now.Add(time.Hour)})
	got, err := e.q.ReadyTenants(e.ctx, ReadyTenantsOptions{TaskType: "email", CountCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range got {
		s = append(s, fmt.Sprintf("%s:%d:%v", r.ItemSpace, r.Ready, r.Exact))
	}
	// small2 waited longest of the small ones; big's count stops at the cap.
	if want := "[big:10:false small2:1:true small1:1:true small0:1:true]"; fmt.Sprint(s) != want {
		t.Fatalf("ready tenants %v, want %s", s, want)
	}
	// Limit samples the oldest vested pointers only.
	got, _ = e.q.ReadyTenants(e.ctx, ReadyTenantsOptions{TaskType: "email", Limit: 2})
	if len(got) != 2 || got[0].ItemSpace != "big" || got[0].Ready != 30 || !got[0].Exact || got[1].ItemSpace != "small2" {
		t.Fatalf("limit 2: %+v", got)
	}
}

func TestZoneJobsAndZoneInfo(t *testing.T) {
	e := newZIEnv(t, Options{})
	e.setLanes(t, "email", "acme", 2)
	now := e.clk.Now()
	var ids []ID
	for i := range 5 {
		ids = append(ids, e.place(t, zijob{ItemSpace: "acme", Vest: now.Add(time.Duration(i-2) * time.Minute), V: zjobValue{Flags: flagTrackable}}))
		e.clk.Advance(time.Millisecond)
	}
	e.place(t, zijob{ItemSpace: "other"})
	e.lease(t, ids[0], "w", time.Minute)

	var jobs []JobInfo
	var cur Cursor
	for {
		page, err := e.q.ZoneJobs(e.ctx, ZoneJobsOptions{TaskType: "email", ItemSpace: "acme", Limit: 2, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, page.Jobs...)
		if page.Next == "" {
			break
		}
		cur = page.Next
	}
	if len(jobs) != 5 {
		t.Fatalf("%d jobs listed, want 5", len(jobs))
	}
	states := map[State]int{}
	for i, j := range jobs {
		states[j.State]++
		if j.ItemSpace != "acme" {
			t.Fatalf("job of %q listed", j.ItemSpace)
		}
		if i > 0 && jobs[i-1].Lane == j.Lane && j.RunAt.Before(jobs[i-1].RunAt) {
			t.Fatal("not in vesting order within a lane")
		}
	}
	if states[StateLeased] != 1 || states[StateReady] != 2 || states[StateScheduled] != 2 {
		t.Fatalf("states %v", states)
	}
	if _, err := e.q.ZoneJobs(e.ctx, ZoneJobsOptions{TaskType: "email", ItemSpace: "other", Cursor: cur}); !errors.Is(err, ErrInvalidCursor) {
		t.Fatalf("another zone's cursor: %v", err)
	}

	info, err := e.q.ZoneInfo(e.ctx, "email", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if info.Lanes != 2 || len(info.LaneStates) == 0 {
		t.Fatalf("zone info %+v", info)
	}
	sum := map[string]int{}
	for _, l := range info.LaneStates {
		if l.PointerMissing || !l.Exact {
			t.Fatalf("lane %+v", l)
		}
		sum["ready"] += l.ReadyJobs
		sum["leased"] += l.LeasedJobs
		sum["scheduled"] += l.ScheduledJobs
	}
	if sum["ready"] != 2 || sum["leased"] != 1 || sum["scheduled"] != 2 {
		t.Fatalf("zone counts %v", sum)
	}
	if info, err := e.q.ZoneInfo(e.ctx, "email", "nobody"); err != nil || info.Lanes != 1 || len(info.LaneStates) != 0 {
		t.Fatalf("empty zone: %+v, %v", info, err)
	}
}

// ZoneSpace places a tenant's zone in its own subspace: inspection finds it
// there.
func TestZoneInspectionFollowsZoneSpace(t *testing.T) {
	e := newZIEnv(t, Options{})
	tenants := e.space.Sub("tenants")
	e.opts.ZoneSpace = func(itemSpace string) tuple.Subspace { return tenants.Sub(itemSpace, "queue") }
	e.q = e.reopen(t, e.raw)
	id := e.place(t, zijob{ItemSpace: "acme", V: zjobValue{Flags: flagTrackable}})
	page, err := e.q.ZoneJobs(e.ctx, ZoneJobsOptions{TaskType: "email", ItemSpace: "acme"})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != id {
		t.Fatalf("zone jobs %+v, %v", page, err)
	}
	if info, err := e.q.Get(e.ctx, id); err != nil || info.ItemSpace != "acme" {
		t.Fatalf("get %+v, %v", info, err)
	}
	ps, err := e.q.Pointers(e.ctx, PointersOptions{TaskType: "email"})
	if err != nil || len(ps.Pointers) != 1 || ps.Pointers[0].ItemSpace != "acme" {
		t.Fatalf("pointers %+v, %v", ps, err)
	}
}

// The inspections cost what their options allow, whatever the number of
// tenants and the backlog: 300 tenants, one of them with 2,000 ready jobs.
func TestZoneInspectionIsBoundedWhateverTheTenantsAndBacklog(t *testing.T) {
	e := newZIEnv(t, Options{})
	now := e.clk.Now()
	for i := range 300 {
		e.place(t, zijob{ItemSpace: fmt.Sprintf("t%03d", i), Vest: now.Add(-time.Duration(300-i) * time.Millisecond)})
	}
	if err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		z := e.q.zoneOf("email", "big")
		l := laneRef{z: z, prio: Normal}
		for i := range 2000 {
			id := NewID(now)
			tr.Set(l.jobKey(now.Add(-time.Hour).UnixMilli()+int64(i), id), (&zjobValue{Payload: []byte("x")}).marshal())
		}
		return e.q.cover(tr, l, now.Add(-time.Hour).UnixMilli(), now.UnixMilli())
	}); err != nil {
		t.Fatal(err)
	}
	counted := kv.WithCounters(e.raw)
	q := e.reopen(t, counted)
	cost := func(what string, f func() error) kv.Stats {
		t.Helper()
		before := counted.Stats()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return counted.Stats().Sub(before)
	}
	d := cost("ready tenants", func() error {
		got, err := q.ReadyTenants(e.ctx, ReadyTenantsOptions{TaskType: "email", Limit: 5, CountCap: 100})
		if err == nil && (len(got) != 5 || got[0].ItemSpace != "big" || got[0].Ready != 100 || got[0].Exact) {
			t.Errorf("ready tenants %+v", got)
		}
		return err
	})
	// Three pointer ranges (5 entries each at most) and five lanes (101
	// keys each at most).
	if d.RangeReads != 3+5 || d.Reads != 0 || d.KeysRead > 3*5+5*101 {
		t.Errorf("ReadyTenants cost %+v", d)
	}
	d = cost("pointers", func() error {
		_, err := q.Pointers(e.ctx, PointersOptions{TaskType: "email", Limit: 10})
		return err
	})
	if d.RangeReads != 1 || d.Reads != 10 || d.KeysRead > 11+10 {
		t.Errorf("Pointers cost %+v", d)
	}
	d = cost("zone jobs", func() error {
		_, err := q.ZoneJobs(e.ctx, ZoneJobsOptions{TaskType: "email", ItemSpace: "big", Limit: 10})
		return err
	})
	if d.RangeReads != 1 || d.KeysRead != 11 {
		t.Errorf("ZoneJobs cost %+v", d)
	}
	d = cost("zone info", func() error {
		info, err := q.ZoneInfo(e.ctx, "email", "big")
		if err == nil && (len(info.LaneStates) != 1 || info.LaneStates[0].ReadyJobs != 2000 || !info.LaneStates[0].Exact) {
			t.Errorf("zone info %+v", info)
		}
		return err
	})
	if d.RangeReads != 2 || d.Reads != 2 || d.KeysRead > 2+1+2001 {
		t.Errorf("ZoneInfo cost %+v", d)
	}
}
