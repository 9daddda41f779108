package cron

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/worker"
)

// startWorker runs one worker with h for task type "tick" until the test
// ends.
func (e *env) startWorker(h func(ctx context.Context, occ Occurrence) error) {
	e.t.Helper()
	w, err := worker.New(worker.Config{Queue: e.q, ID: "w", Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := Handle(w, "tick", h, worker.HandlerOptions{Lease: 30 * time.Second}); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	e.t.Cleanup(func() { testhooks.KillWorker(w); <-done })
}

// TestHandle runs occurrences through package worker: a success schedules
// the next; worker.Cancel cancels the occurrence (not a dead letter) and
// schedules the next; an occurrence of a removed schedule completes without running, one
// of a changed schedule is skipped for the new version's.
func TestHandle(t *testing.T) {
	e := newEnv(t, nil)
	var (
		mu  sync.Mutex
		ran []Occurrence
	)
	e.startWorker(func(ctx context.Context, occ Occurrence) error {
		mu.Lock()
		ran = append(ran, occ)
		mu.Unlock()
		if string(occ.Payload) == "cancel" {
			return worker.Cancel("not today")
		}
		return nil
	})
	d := &clockDriver{t: t, e: e}
	runs := func() int { mu.Lock(); defer mu.Unlock(); return len(ran) }

	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", Payload: []byte("hello")})
	e.clk.Set(epoch.Add(time.Minute))
	d.until("the first run", func() bool { return e.nextAt("tick").Equal(epoch.Add(2 * time.Minute)) })
	if runs() != 1 || string(ran[0].Payload) != "hello" || !ran[0].ScheduledAt.Equal(epoch.Add(time.Minute)) || ran[0].Attempt != 1 {
		t.Fatalf("ran %+v", ran)
	}

	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", Payload: []byte("cancel")})
	e.clk.Set(epoch.Add(2 * time.Minute))
	d.until("the cancelled run", func() bool { return e.nextAt("tick").Equal(epoch.Add(3 * time.Minute)) })
	if n, _ := e.q.DeadCount(e.ctx, "tick"); n != 0 {
		t.Fatalf("dead letters %d, want none: a cancelled occurrence is not a dead letter", n)
	}

	// A stale occurrence (an earlier version's, left by a Register that
	// stopped between its steps) and an orphan (its schedule removed):
	// enqueued by hand, as the interrupted operations would leave them.
	stale := definition{Schedule: Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", Payload: []byte("old")}, Gen: 1}
	orphan := definition{Schedule: Schedule{Name: "gone", Spec: "* * * * *", TaskType: "tick"}, Gen: 1}
	before := runs()
	if err := e.q.Cancel(e.ctx, e.entry("tick").NextID); err != nil {
		t.Fatal(err)
	}
	at := epoch.Add(3 * time.Minute)
	for _, x := range []definition{stale, orphan} {
		if _, err := e.q.Enqueue(e.ctx, occurrenceJob(e.q, x, at, time.Time{}, e.clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Set(at)
	d.until("the stale occurrence to be replaced", func() bool { return e.nextAt("tick").Equal(at.Add(time.Minute)) })
	d.until("the orphan to complete", func() bool { return len(e.jobs("tick")) == 1 })
	if runs() != before {
		t.Fatalf("ran %+v, want the stale and orphaned occurrences skipped", ran[before:])
	}
	if _, env := e.pending("tick"); string(env.Payload) != "cancel" {
		t.Fatalf("the next occurrence carries %q, want the current version's payload", env.Payload)
	}
}
