package cron

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/worker"
)

type reportArgs struct {
	Team string `json:"team"`
}

func (reportArgs) Kind() string { return "report" }

type badArgs struct {
	F func() `json:"f"`
}

func (badArgs) Kind() string { return "bad" }

type ptrArgs struct{ name string }

func (p *ptrArgs) Kind() string { return p.name }

// A typed periodic job is named after its args' kind, stores them as the
// schedule's payload, and hands each occurrence its decoded args.
func TestNewPeriodicJobRunsWithTypedArgs(t *testing.T) {
	e := newEnv(t, nil)
	var (
		mu  sync.Mutex
		got []*Run[reportArgs]
	)
	j := NewPeriodicJob(Schedule{Spec: "* * * * *"}, reportArgs{Team: "ops"}, func(_ context.Context, r *Run[reportArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return nil
	}, worker.HandlerOptions{Lease: 30 * time.Second})
	w := e.newWorker("w1")
	if err := Periodic(e.ctx, w, j); err != nil {
		t.Fatal(err)
	}
	if en := e.entry("report"); !en.Alive || en.TaskType != "report" || string(en.Payload) != `{"team":"ops"}` {
		t.Fatalf("typed schedule stored as %+v", en)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	t.Cleanup(func() { testhooks.KillWorker(w); <-done })
	d := &clockDriver{t: t, e: e}
	e.clk.Set(epoch.Add(2 * time.Minute))
	d.until("an occurrence to run", func() bool { return e.nextAt("report").After(epoch.Add(2 * time.Minute)) })
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Args.Team != "ops" || got[0].Name != "report" || got[0].ScheduledAt.IsZero() {
		t.Fatalf("runs %+v, want the args {ops} of schedule report", got)
	}
}

// Declarations that cannot work fail in Periodic, with nothing registered;
// an occurrence whose payload does not decode is dead-lettered at once
// (TestNewPeriodicJobTx runs one), not retried.
func TestNewPeriodicJobRejectsBadDeclarations(t *testing.T) {
	e := newEnv(t, nil)
	h := func(context.Context, *Run[reportArgs]) error { return nil }
	for name, j := range map[string]PeriodicJob{
		"args that do not encode": NewPeriodicJob(Schedule{Spec: "@hourly"}, badArgs{F: func() {}}, func(context.Context, *Run[badArgs]) error { return nil }, worker.HandlerOptions{}),
		"args and a payload":      NewPeriodicJob(Schedule{Spec: "@hourly", Payload: []byte("x")}, reportArgs{}, h, worker.HandlerOptions{}),
		"nil handler":             NewPeriodicJob(Schedule{Spec: "@hourly"}, reportArgs{}, nil, worker.HandlerOptions{}),
		"Kind panics":             NewPeriodicJob(Schedule{Spec: "@hourly"}, (*ptrArgs)(nil), func(context.Context, *Run[*ptrArgs]) error { return nil }, worker.HandlerOptions{}),
	} {
		if err := Periodic(e.ctx, e.newWorker("w-"+name), j); !errors.Is(err, ErrInvalidSchedule) {
			t.Errorf("%s: %v, want ErrInvalidSchedule", name, err)
		}
	}
	if es, err := List(e.ctx, e.q); err != nil || len(es) != 0 {
		t.Fatalf("schedules after rejected declarations: %+v %v", es, err)
	}

	j := NewPeriodicJob(Schedule{Spec: "@hourly"}, reportArgs{}, h, worker.HandlerOptions{})
	err := j.Handler(e.ctx, Occurrence{Name: "report", Payload: []byte("not json")})
	var undec *undecodableError
	if !errors.As(err, &undec) || !errors.Is(err, worker.ErrDecode) {
		t.Fatalf("an occurrence that does not decode: %v, want an undecodableError wrapping %v", err, worker.ErrDecode)
	}
}
