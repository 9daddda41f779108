package soak

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestHistoryWaitsForInFlightCronCompletions is defect 9's cause, by hand:
// a cron occurrence's handler has returned and the transaction that
// completes it and enqueues its successor is in flight when its worker is
// killed. A kill (testhooks.KillWorker) waits for neither, and the commit goes on. The soak
// reads the history only once h.handlers is done, so that span must cover
// the completing transaction. Before the fix it ended when the user
// handler returned: the history could be read between the chain's holder
// and its successor, and the checker saw a chain with no pending
// occurrence and a queued occurrence that was no chain's next.
func TestHistoryWaitsForInFlightCronCompletions(t *testing.T) {
	ctx := context.Background()
	mem := memkv.Open(memkv.Options{Seed: 1})
	defer mem.Close()
	cfg := Short()
	cfg.UnknownCommitted, cfg.UnknownNotCommitted, cfg.Conflict = 0, 0, 0
	h := newHarness(mem, tuple.FromTuple(tuple.Tuple{"quiesce"}), cfg)
	admin, err := h.openQueue(ctx, mainDB, clock.Real())
	if err != nil {
		t.Fatal(err)
	}
	if err := cron.Register(ctx, admin, cron.Schedule{Name: "c", Spec: "@every 1s", TaskType: cronType}); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.onCronCommit = func() { once.Do(func() { close(entered); <-release }) }
	w, err := h.startWorker(ctx, mainDB, "w1", &workerClock{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second): // a failure bound, not a measurement
		t.Fatal("no occurrence reached its completing transaction")
	}
	w.Kill()
	w.Wait()
	if n := h.inflight.Load(); n != 1 {
		t.Fatalf("%d tracked runs while an occurrence's completing transaction is in flight after the kill, want 1: the history could be read now", n)
	}
	close(release)
	h.handlers.Wait()
	hist, err := h.history(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Completions) != 1 {
		t.Fatalf("%d completions after the wait, want the one in flight", len(hist.Completions))
	}
	if len(hist.CronEntries) != 1 || !hist.CronEntries[0].Alive || len(hist.CronPending) != 1 || hist.CronEntries[0].NextID != hist.CronPending[0] {
		t.Fatalf("after the completion: entries %+v, pending %v; want the successor as the chain's next", hist.CronEntries, hist.CronPending)
	}
}
