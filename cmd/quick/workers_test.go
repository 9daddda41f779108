package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// startWorker runs a worker of task type email on the harness's database
// and clock, with one job it holds (a handler that blocks until the test
// ends), and waits until its presence record lists that job: the record is
// what quick workers reads (worker.ListWorkers).
func (h *harness) startWorker(id string) { h.t.Helper(); h.startWorkerIn(id, "") }

// startWorkerIn is startWorker for a worker labelled with a cluster, as a
// worker.Group's member is.
func (h *harness) startWorkerIn(id, cluster string) {
	h.t.Helper()
	q := h.queue()
	w, err := worker.New(worker.Config{Queue: q, ID: id, Cluster: cluster, Clock: h.clk, HeartbeatPeriod: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		h.t.Fatal(err)
	}
	hold := make(chan struct{})
	if err := worker.RegisterRaw(w, "email", func(ctx context.Context, _ *worker.RawJob) error {
		select {
		case <-hold:
		case <-ctx.Done():
		}
		return nil
	}, worker.HandlerOptions{Lease: time.Minute, Concurrency: 1}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), quick.NewJob{TaskType: "email", ItemSpace: "acme"}); err != nil {
		h.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	h.t.Cleanup(func() { close(hold); stop(); <-done })
	// The worker writes its record on its clock rounds: step the fake
	// clock until the record lists the running job (a bound for a hung
	// worker, not a measurement).
	for i := 0; ; i++ {
		ps, err := worker.ListWorkers(context.Background(), q, 10)
		if err != nil {
			h.t.Fatal(err)
		}
		if i := slices.IndexFunc(ps, func(p worker.Presence) bool { return p.ID == id }); i >= 0 && len(ps[i].Running) == 1 {
			return
		}
		if i == 2000 {
			h.t.Fatalf("worker %s never listed its running job: %+v", id, ps)
		}
		h.clk.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
}

func TestWorkers(t *testing.T) {
	h := newHarness(t)
	if out := h.ok("workers"); out != "no live workers\n" {
		t.Errorf("none: %q", out)
	}
	h.startWorker("w1")
	out := h.ok("workers", "--type", "email", "-o", "json")
	var doc struct {
		Workers []workerRow `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	rows := doc.Workers
	if len(rows) != 1 || rows[0].ID != "w1" || rows[0].Status != "ok" || rows[0].Process == "" || len(rows[0].Running) != 1 ||
		strings.Join(rows[0].TaskTypes, ",") != "email" || rows[0].Started == nil {
		t.Errorf("json: %s", out)
	}
	table := h.ok("workers")
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "WORKER  PROCESS") ||
		!strings.HasPrefix(lines[1], "w1 ") || !strings.HasSuffix(lines[1], " ok") {
		t.Errorf("table:\n%s", table)
	}
	if out := h.ok("workers", "--type", "other"); out != "no live workers\n" {
		t.Errorf("other type: %q", out)
	}
	h.fails("invalid --observe", "workers", "--observe", "-1s")
	h.fails("invalid --stale", "workers", "--stale", "-1s")
}

// A worker of a process serving several clusters shows its cluster.
func TestWorkersShowTheirCluster(t *testing.T) {
	h := newHarness(t)
	h.startWorkerIn("w1", "east")
	table := h.ok("workers")
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "WORKER  CLUSTER  PROCESS") ||
		!strings.HasPrefix(lines[1], "w1      east ") {
		t.Errorf("table:\n%s", table)
	}
	if out := h.ok("workers", "-o", "json"); !strings.Contains(out, `"cluster": "east"`) {
		t.Errorf("json: %s", out)
	}
}

func TestLaneList(t *testing.T) {
	if got := present.LaneList([]int{0, 1, 2, 3, 8, 10, 11}); got != "0-3,8,10-11" {
		t.Errorf("laneList: %q", got)
	}
}
