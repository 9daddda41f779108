package main

import (
	"context"
	"encoding/json"
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

// jobs show -o json carries a retained job's times and errors too.
func TestJobsShowRetainedJSON(t *testing.T) {
	h := newHarness(t)
	q := h.queue()
	ctx := context.Background()
	id := h.id(1)
	if _, err := q.Enqueue(ctx, quick.NewJob{ID: id, TaskType: "email", Payload: []byte(`{}`), Retain: time.Hour}); err != nil {
		t.Fatal(err)
	}
	l := h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w1", Max: 1, Lease: time.Minute})[0]
	if err := q.Fail(ctx, l, "smtp: connection refused"); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(10 * time.Second)
	l = h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w1", Max: 1, Lease: time.Minute})[0]
	if err := q.Complete(ctx, l); err != nil {
		t.Fatal(err)
	}
	var got struct {
		State      string     `json:"state"`
		StartedAt  *time.Time `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
		ExpiresAt  *time.Time `json:"expires_at"`
		Errors     []struct {
			Attempt int    `json:"attempt"`
			Error   string `json:"error"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(h.ok("jobs", "show", "-o", "json", id.String())), &got); err != nil {
		t.Fatal(err)
	}
	if got.State != "completed" || got.StartedAt == nil || got.FinishedAt == nil || got.ExpiresAt == nil ||
		got.ExpiresAt.Sub(*got.FinishedAt) != time.Hour {
		t.Errorf("json = %+v", got)
	}
	if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 || got.Errors[0].Error != "smtp: connection refused" {
		t.Errorf("errors = %+v, want the one failed attempt", got.Errors)
	}
}
