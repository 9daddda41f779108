package worker

import (
	"errors"
	"testing"
	"time"
)

// TestReady: a worker is not ready before Run, nor until its first clock
// check; ready once it claims; a worker whose clock is far off the others'
// stands by and says so; a stopped worker is not running.
func TestReady(t *testing.T) {
	e := newClockedEnv(t, zonesOptions())
	mk := func(id string, off time.Duration) *Worker {
		cfg := Config{ID: id}
		if off != 0 {
			cfg.Clock = skewed{e.clk, off}
		}
		return e.newWorker(cfg, func(w *Worker) {
			if err := RegisterRaw(w, "ready", noopRaw, HandlerOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b, c := mk("a", 0), mk("b", 0), mk("c", 20*time.Second)
	if err := a.Ready(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("before Run: %v, want ErrNotRunning", err)
	}
	ha := e.start(a)
	for _, w := range []*Worker{b, c} {
		e.start(w)
	}
	e.waitFor("the first clock rounds", func() bool {
		for _, w := range []*Worker{a, b, c} {
			if known, _ := w.zclock.state(); !known {
				return false
			}
		}
		return true
	})
	e.step(2*clockPeriods*time.Second, time.Second, a, b, c)
	if err := c.Ready(); !errors.Is(err, ErrClockStandby) {
		t.Errorf("skewed worker: %v, want ErrClockStandby", err)
	}
	for _, w := range []*Worker{a, b} {
		if err := w.Ready(); err != nil {
			t.Errorf("worker %s: %v, want ready", w.ID(), err)
		}
	}
	if err := e.stop(a, ha); err != nil {
		t.Fatal(err)
	}
	if err := a.Ready(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("after Stop: %v, want ErrNotRunning", err)
	}
}

// TestReadyBeforeTheClockCheck: a running worker whose clock was never
// compared is not ready.
func TestReadyBeforeTheClockCheck(t *testing.T) {
	e := newClockedEnv(t, zonesOptions())
	w := e.newWorker(Config{ID: "a"}, func(w *Worker) {
		if err := RegisterRaw(w, "ready", noopRaw, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	w.mu.Lock()
	w.started = true // as Run sets it, before any clock round
	w.mu.Unlock()
	if err := w.Ready(); !errors.Is(err, ErrClockStandby) {
		t.Errorf("no clock round yet: %v, want ErrClockStandby", err)
	}
}
