package worker

import "time"

// recv waits for what a handler or goroutine sends on ch, failing the test
// with what it waited for after waitLimit of real time (a hang guard, never
// a measured duration: a broken build once hung the package for minutes on
// an unbounded receive).
func recv[T any](e *env, what string, ch <-chan T) T {
	e.t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		e.t.Fatalf("timed out after %v waiting for %s", waitLimit, what)
		var zero T
		return zero
	}
}
