package main

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A retained job shows its outcome, times and errors after it finished
// (issue 26): one that failed once, then was cancelled by its handler.
func TestJobsShowRetained(t *testing.T) {
	h := newHarness(t)
	q := h.queue()
	ctx := context.Background()
	id := h.id(1)
	if _, err := q.Enqueue(ctx, quick.NewJob{ID: id, TaskType: "email", Payload: []byte(`{"to":"a@example.com"}`), Retain: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	l := h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w1", Max: 1, Lease: time.Minute})[0]
	if err := q.Fail(ctx, l, "smtp: connection refused"); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(10 * time.Second)
	l = h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w1", Max: 1, Lease: time.Minute})[0]
	h.clk.Advance(2 * time.Second)
	if _, err := q.Ack(ctx, quick.Ack{Lease: l, Kind: quick.AckCancel, Error: "address bounced"}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	golden(t, "jobs_show_cancelled", h.ok("jobs", "show", id.String()))
	h.fails("already finished (cancelled): nothing to cancel", "jobs", "cancel", "--yes", id.String())
	h.fails("--state completed: finished jobs are not listed", "jobs", "list", "--type", "email", "--state", "completed")
}
