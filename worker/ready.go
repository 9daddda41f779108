package worker

import (
	"errors"
	"fmt"
)

// Why a worker is not ready (Ready); test them with errors.Is.
var (
	// ErrNotRunning: Run has not been called, or the worker is stopping
	// or has stopped.
	ErrNotRunning = errors.New("worker: not running")
	// ErrClockStandby: the worker runs but claims nothing, because its
	// clock check has not yet compared this process's clock with the other
	// workers', or found it too far from theirs (docs/design.md, "Clock
	// skew").
	ErrClockStandby = errors.New("worker: standing by for the clock check")
)

// Ready reports whether the worker claims jobs now: nil if Run is running
// and not stopping, and the clock check lets it claim; otherwise an error
// wrapping ErrNotRunning or ErrClockStandby that says why. A paused task
// type does not make a worker unready: pausing is the operator's choice,
// and a probe that failed on it would have an orchestrator restart
// workers that are fine. Ready reads no database; it is what /readyz of
// workermain asks besides a database round trip.
func (w *Worker) Ready() error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	select {
	case <-w.done:
		return fmt.Errorf("%w: Run has returned", ErrNotRunning)
	default:
	}
	switch {
	case !started:
		return fmt.Errorf("%w: Run not called yet", ErrNotRunning)
	case w.stopping():
		return fmt.Errorf("%w: stopping", ErrNotRunning)
	}
	if reason := w.clockRefusal(nil); reason != "" {
		return fmt.Errorf("%w: %s", ErrClockStandby, reason)
	}
	return nil
}
