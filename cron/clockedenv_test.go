package cron

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/worker"
)

// TestWorkerJoiningAfterClockJump pins what TestAcceptanceWorkers relies
// on: on newClockedEnv, a worker that joins after the test has jumped the
// fake clock agrees with one that joined before the jump, and takes lanes.
// On a database whose versions follow real time (newEnv), the second reads
// the first's clock as a minute behind (its beat's clock plus the real time
// since) and stands by until its next heartbeat, a day of fake time later:
// the acceptance run stalled that way when a loaded machine let the test
// move the clock before every worker had joined, and then killed the one
// worker that had joined first.
func TestWorkerJoiningAfterClockJump(t *testing.T) {
	e := newClockedEnv(t, nil)
	// The registry package worker keeps under the queue (worker.New).
	reg := lanes.NewRegistry(e.q.DB(), e.q.Root().Sub("w"), lanes.Options{})
	start := func(id string) {
		w, err := worker.New(worker.Config{Queue: e.q, ID: id, Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour, Replicas: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := Handle(w, "tick", func(context.Context, Occurrence) error { return nil }, worker.HandlerOptions{Lease: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(context.Background()) }()
		t.Cleanup(func() { testhooks.KillWorker(w); <-done })
	}
	// joined waits for id's first heartbeat, which carries its standing.
	joined := func(id string) lanes.Member {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for {
			ms, err := reg.Snapshot(e.ctx, "tick")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.ID == id && m.Counter > 0 {
					return m
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never joined: members %+v", id, ms)
			}
			<-time.After(time.Millisecond)
		}
	}
	start("early")
	if m := joined("early"); m.Standby {
		t.Fatalf("the first worker stands by: %+v", m)
	}
	e.clk.Advance(time.Minute)
	start("late")
	if m := joined("late"); m.Standby {
		t.Fatalf("a worker joining a minute of fake time after another stands by, as if its clock were a minute off: %+v", m)
	}
}
