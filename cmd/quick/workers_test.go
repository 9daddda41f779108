package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/lanes"
)

// joinWorkers registers workers the way the worker runtime does, in the
// registry beside the queue. (Presence records replace the registry when
// worker.ListWorkers lands: this is then a worker's heartbeat.)
func (h *harness) joinWorkers(ids ...string) []*lanes.Tracker {
	h.t.Helper()
	q := h.queue()
	reg := lanes.NewRegistry(h.db, q.Root().Sub("w"), lanes.Options{Clock: h.clk, Host: "host-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var ts []*lanes.Tracker
	for _, id := range ids {
		tr := lanes.NewTracker(reg, "email", id, q.Lanes())
		if err := tr.Join(context.Background()); err != nil {
			h.t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	// More rounds, so every member has seen the others beat and takes
	// only its share.
	for range 2 {
		h.clk.Advance(time.Second)
		for _, tr := range ts {
			if err := tr.Beat(context.Background()); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	return ts
}

func TestWorkers(t *testing.T) {
	h := newHarness(t)
	if out := h.ok("workers"); out != "no live workers\n" {
		t.Errorf("none: %q", out)
	}
	h.joinWorkers("w1", "w2") // beats on the harness clock, the last at its present
	h.clk.Advance(time.Second)
	golden(t, "workers", h.ok("workers"))
	h.clk.Advance(5 * time.Second)
	out := h.ok("workers", "--type", "email", "-o", "json")
	var doc struct {
		Workers []workerRow `json:"workers"`
	}
	err := json.Unmarshal([]byte(out), &doc)
	rows := doc.Workers
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Status != "stale" || rows[0].Process != "host-1" || len(rows[0].TaskTypes) != 1 || *rows[0].BeatAgeMs != 6000 {
		t.Errorf("json: %s", out)
	}
	if out := h.ok("workers", "--type", "other"); out != "no live workers\n" {
		t.Errorf("other type: %q", out)
	}
}

func TestWorkersObserve(t *testing.T) {
	h := newHarness(t)
	ts := h.joinWorkers("w1", "w2")
	d, out, errb := h.deps("")
	done := make(chan result, 1)
	slept := h.clk.Changed()
	go func() { done <- runApp(d, out, errb, "workers", "--observe", "2s") }()
	waitSleep(t, slept)
	h.clk.Advance(time.Second)
	if err := ts[0].Beat(context.Background()); err != nil { // w1 beats, w2 does not
		t.Fatal(err)
	}
	h.clk.Advance(time.Second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], "beating") || !strings.HasSuffix(lines[2], "silent") {
		t.Errorf("observe:\n%s", r.stdout)
	}
	h.fails("invalid --observe", "workers", "--observe", "-1s")
	h.fails("invalid --stale", "workers", "--stale", "-1s")
}

func TestLaneList(t *testing.T) {
	if got := present.LaneList([]int{0, 1, 2, 3, 8, 10, 11}); got != "0-3,8,10-11" {
		t.Errorf("laneList: %q", got)
	}
}
