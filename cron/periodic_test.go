package cron

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/worker"
)

func (e *env) newWorker(id string) *worker.Worker {
	e.t.Helper()
	w, err := worker.New(worker.Config{Queue: e.q, ID: id, Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// Periodic jobs declared on the worker run with nothing else set up: the
// schedule is stored, the chain runs, and a second process declaring the
// same job shares the chain instead of starting another.
func TestPeriodicRunsDeclaredJobs(t *testing.T) {
	e := newEnv(t, nil)
	var (
		mu  sync.Mutex
		ran []time.Time
		tx  int
	)
	jobs := func() []PeriodicJob {
		return []PeriodicJob{
			{
				Schedule: Schedule{Name: "tick", Spec: "* * * * *"},
				Handler: func(_ context.Context, occ Occurrence) error {
					mu.Lock()
					defer mu.Unlock()
					ran = append(ran, occ.ScheduledAt)
					return nil
				},
				Options: worker.HandlerOptions{Lease: 30 * time.Second},
			},
			{
				Schedule: Schedule{Name: "report", Spec: "*/2 * * * *", TaskType: "report"},
				HandlerTx: func(context.Context, Occurrence) (func(kv.Transaction) error, error) {
					return func(tr kv.Transaction) error {
						mu.Lock()
						tx++
						mu.Unlock()
						return nil
					}, nil
				},
			},
		}
	}
	w1 := e.newWorker("w1")
	if err := Periodic(e.ctx, w1, jobs()...); err != nil {
		t.Fatal(err)
	}
	first := e.entry("tick")
	if !first.Alive || first.TaskType != "tick" || !first.Next.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("tick after Periodic: %+v", first)
	}
	// A second process with the same declarations writes nothing new.
	w2 := e.newWorker("w2")
	if err := Periodic(e.ctx, w2, jobs()...); err != nil {
		t.Fatal(err)
	}
	if again := e.entry("tick"); again.NextID != first.NextID {
		t.Fatalf("a second declaration replaced the occurrence: %s -> %s", first.NextID, again.NextID)
	}

	done := make(chan error, 1)
	go func() { done <- w1.Run(context.Background()) }()
	t.Cleanup(func() { testhooks.KillWorker(w1); <-done })
	d := &clockDriver{t: t, e: e}
	e.clk.Set(epoch.Add(2 * time.Minute))
	d.until("tick and report to run", func() bool {
		return e.nextAt("tick").After(epoch.Add(2*time.Minute)) && e.nextAt("report").After(epoch.Add(2*time.Minute))
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) == 0 || tx == 0 {
		t.Fatalf("ran tick %v, report %d times", ran, tx)
	}
}

// Bad declarations fail before anything is written or registered.
func TestPeriodicRejectsBadDeclarations(t *testing.T) {
	e := newEnv(t, nil)
	ok := func(context.Context, Occurrence) error { return nil }
	okTx := func(context.Context, Occurrence) (func(kv.Transaction) error, error) { return nil, nil }
	cases := []struct {
		name string
		jobs []PeriodicJob
		want error
	}{
		{"no handler", []PeriodicJob{{Schedule: Schedule{Name: "a", Spec: "@hourly"}}}, ErrInvalidSchedule},
		{"two handlers", []PeriodicJob{{Schedule: Schedule{Name: "a", Spec: "@hourly"}, Handler: ok, HandlerTx: okTx}}, ErrInvalidSchedule},
		{"shared task type", []PeriodicJob{
			{Schedule: Schedule{Name: "a", Spec: "@hourly", TaskType: "t"}, Handler: ok},
			{Schedule: Schedule{Name: "b", Spec: "@daily", TaskType: "t"}, Handler: ok},
		}, ErrInvalidSchedule},
		{"bad spec after a good job", []PeriodicJob{
			{Schedule: Schedule{Name: "a", Spec: "@hourly"}, Handler: ok},
			{Schedule: Schedule{Name: "b", Spec: "61 * * * *"}, Handler: ok},
		}, ErrInvalidSpec},
	}
	w := e.newWorker("w")
	for _, c := range cases {
		if err := Periodic(e.ctx, w, c.jobs...); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if es, err := List(e.ctx, e.q); err != nil || len(es) != 0 {
		t.Fatalf("schedules after rejected declarations: %+v %v", es, err)
	}
	// No handler was registered either: the same task types still take one.
	if err := Periodic(e.ctx, w, PeriodicJob{Schedule: Schedule{Name: "a", Spec: "@hourly"}, Handler: ok}); err != nil {
		t.Fatal(err)
	}
}
