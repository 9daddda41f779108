package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// `quick stats` shows the workers' background duties: the last pass of
// each, who ran it and what it removed.
func TestStatsShowsDuties(t *testing.T) {
	h := newHarness(t)
	q := h.queue()
	if _, err := q.Enqueue(context.Background(), quick.NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{Queue: q, ID: "w1", DisableWake: true, Duties: []worker.Duty{{
		Name: "tidy", Every: time.Minute,
		Run: func(context.Context) (worker.DutyReport, error) {
			return worker.DutyReport{Count: 3, Detail: "things tidied"}, nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.RegisterRaw(w, "email", func(context.Context, *worker.RawJob) error { return nil }, worker.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sts, err := worker.DutyStates(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		// Wait for tidy itself: the states sort by name and the built-in
		// duties (purge-dead/..., purge-markers) come first and may run
		// before it (waiting on the first state failed in CI).
		if tidyRan(sts) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the duty never ran")
		}
		h.clk.Advance(5 * time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	for stopped := false; !stopped; {
		select {
		case <-done:
			stopped = true
		case <-time.After(5 * time.Millisecond):
			h.clk.Advance(time.Second)
		}
	}
	out := h.ok("stats")
	if !strings.Contains(out, "DUTY") || !strings.Contains(out, "tidy") || !strings.Contains(out, "3 things tidied") || !strings.Contains(out, "w1") {
		t.Fatalf("stats without the duty:\n%s", out)
	}
}

func tidyRan(sts []worker.DutyState) bool {
	for _, st := range sts {
		if st.Name == "tidy" && st.Runs > 0 {
			return true
		}
	}
	return false
}
