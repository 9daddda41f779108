package cron

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// TestTaskTypeChangeWhileRunning: changing a schedule's task type while an
// occurrence runs enqueues nothing under the new type (whose unique key is
// free) until the running one completes; its completion then enqueues the
// new version's next occurrence. Before the fix Register enqueued the new
// type's occurrence at once, which a worker could run alongside the first.
func TestTaskTypeChangeWhileRunning(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "old"}
	e.register(s)
	e.clk.Advance(time.Minute)
	ls := e.claim("old", "w1")
	if len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	s.TaskType = "new"
	e.register(s)
	if js := e.jobs("new"); len(js) != 0 {
		t.Fatalf("Register enqueued %d occurrence(s) of the new task type while one of the old runs: %+v", len(js), js)
	}
	if x := e.entry("sweep"); !x.Alive || x.NextID != ls[0].ID {
		t.Fatalf("List: %+v, want the running occurrence of the old type", x)
	}
	if err := e.finish(ls[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	if js := e.jobs("old"); len(js) != 0 {
		t.Fatalf("old task type still has %+v", js)
	}
	_, env := e.pending("new")
	if !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("successor at %v, want %v", env.ScheduledAt, epoch.Add(2*time.Minute))
	}
	if x := e.entry("sweep"); !x.Alive {
		t.Fatalf("chain not alive after the change: %+v", x)
	}
}

// TestTaskTypeChangeOfPendingOccurrence: a pending occurrence of the old
// task type is cancelled and replaced at once.
func TestTaskTypeChangeOfPendingOccurrence(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "old"}
	e.register(s)
	s.TaskType = "new"
	e.register(s)
	if js := e.jobs("old"); len(js) != 0 {
		t.Fatalf("old occurrence left pending: %+v", js)
	}
	if _, env := e.pending("new"); !env.ScheduledAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("new occurrence at %v", env.ScheduledAt)
	}
}

// TestRemoveRegisterRacingCompletion interleaves by hand, inside a real
// worker: the occurrence is claimed; the schedule is removed (the running
// occurrence is left alone); the handler reads the definition and finds
// it removed; the schedule is registered again (the running occurrence
// still holds the unique key, so Register enqueues nothing); then the
// handler completes. The completion must read the definition in its own
// transaction and enqueue the next occurrence: before the fix it completed
// with no successor, and the chain stayed broken until a repair.
func TestRemoveRegisterRacingCompletion(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"}
	e.register(s)
	first := e.entry("tick").NextID
	var (
		sawRemoved = make(chan defState, 1)
		hookErr    = make(chan error, 2)
	)
	testHookClaimed = func() { hookErr <- Remove(context.Background(), e.q, "tick") }
	testHookDefinitionRead = func(st defState) {
		sawRemoved <- st
		hookErr <- Register(context.Background(), e.q, s)
	}
	t.Cleanup(func() { testHookClaimed, testHookDefinitionRead = nil, nil })
	ran := make(chan Occurrence, 10)
	e.startWorker(func(_ context.Context, occ Occurrence) error { ran <- occ; return nil })
	e.clk.Set(epoch.Add(time.Minute))

	d := &clockDriver{t: t, e: e}
	d.until("the occurrence to be claimed and its definition read", func() bool { return len(sawRemoved) == 1 })
	if st := <-sawRemoved; st != defRemoved {
		t.Fatalf("the handler saw %v, want the definition removed", st)
	}
	for range 2 {
		if err := <-hookErr; err != nil {
			t.Fatal(err)
		}
	}
	d.until("the occurrence to complete", func() bool {
		info, err := e.q.Get(e.ctx, first)
		return quick.IsNotFound(err) || err == nil && info.State == quick.StateFinished
	})
	x := e.entry("tick")
	if !x.Alive {
		t.Fatalf("the re-registered schedule has no pending occurrence after the completion: %+v", x)
	}
	if !x.Next.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("next occurrence at %v, want %v", x.Next, epoch.Add(2*time.Minute))
	}
	if len(ran) != 0 {
		t.Fatalf("the occurrence of the removed schedule ran: %+v", <-ran)
	}
}

// TestChangeCarriesOnFromTheReplacedOccurrence: a changed schedule's first
// occurrence comes after the replaced one's time, not merely after
// Register's now: a worker whose clock ran ahead of Register's already ran
// the time that Register's clock still sees as next. Before the fix the
// new version ran 00:01 a second time.
func TestChangeCarriesOnFromTheReplacedOccurrence(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep", Payload: []byte("v1")}
	e.clk.Set(epoch.Add(time.Minute - 500*time.Millisecond)) // Register's clock
	e.register(s)
	// A worker whose clock is half a second ahead runs 00:01 and enqueues
	// 00:02.
	ahead, err := quick.Open(e.ctx, e.db, e.q.Subspace(), quick.Options{Clock: clock.NewFake(epoch.Add(time.Minute)), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ahead.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "sweep", Holder: "w1", Lease: 10 * time.Second})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claimed %+v, %v", res, err)
	}
	if err := e.finish(res.Jobs[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	s.Payload = []byte("v2")
	e.register(s)
	_, env := e.pending("sweep")
	if want := epoch.Add(2 * time.Minute); !env.ScheduledAt.Equal(want) || string(env.Payload) != "v2" {
		t.Fatalf("the new version's first occurrence is at %v (payload %q), want %v: 00:01 ran already", env.ScheduledAt, env.Payload, want)
	}
}

// TestRepairWaitsForTheOldTaskTypesOccurrence: after a task-type change,
// the occurrence still running under the old type holds the chain for
// Repair and List too. Before the fix Repair saw no holder under the new
// type and enqueued a second occurrence beside the running one.
func TestRepairWaitsForTheOldTaskTypesOccurrence(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "old"}
	e.register(s)
	e.clk.Advance(time.Minute)
	ls := e.claim("old", "w1")
	if len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	s.TaskType = "new"
	e.register(s)
	n, err := Repair(e.ctx, e.q)
	if err != nil || n != 0 {
		t.Fatalf("Repair = %d, %v; want nothing restored while the old type's occurrence runs", n, err)
	}
	if js := e.jobs("new"); len(js) != 0 {
		t.Fatalf("an occurrence of the new type beside the running one: %+v", js)
	}
	if x := e.entry("sweep"); !x.Alive || x.NextID != ls[0].ID {
		t.Fatalf("List: %+v, want the running occurrence %s", x, ls[0].ID)
	}
	// A second change while it still runs: it still holds the chain.
	s.TaskType = "newer"
	e.register(s)
	if n, err := Repair(e.ctx, e.q); err != nil || n != 0 {
		t.Fatalf("Repair after a second change = %d, %v", n, err)
	}
	if err := e.finish(ls[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, env := e.pending("newer"); !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("successor at %v", env.ScheduledAt)
	}
	if js := append(e.jobs("old"), e.jobs("new")...); len(js) != 0 {
		t.Fatalf("left behind: %+v", js)
	}
}

// TestSecondChangeStillCarriesOn: two changes in a row, the second
// replacing the occurrence the first enqueued, still carry on after the
// time a fast-clocked worker ran.
func TestSecondChangeStillCarriesOn(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep", Payload: []byte("v1")}
	e.clk.Set(epoch.Add(time.Minute - 500*time.Millisecond))
	e.register(s)
	ahead, err := quick.Open(e.ctx, e.db, e.q.Subspace(), quick.Options{Clock: clock.NewFake(epoch.Add(time.Minute)), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ahead.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "sweep", Holder: "w1", Lease: 10 * time.Second})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claimed %+v, %v", res, err)
	}
	if err := e.finish(res.Jobs[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"v2", "v3"} {
		s.Payload = []byte(p)
		e.register(s)
		if _, env := e.pending("sweep"); !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
			t.Fatalf("after the change to %s: first occurrence at %v, want %v", p, env.ScheduledAt, epoch.Add(2*time.Minute))
		}
	}
}
