package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/quickfdb/quickfdb/quick"
)

// Queue controls that issue 13 adds to the library in parallel with this
// console (pause and resume of a task type, run a scheduled job now, bulk
// cancel and requeue by filter). The console is built on the library as it
// stands; each control plugs in here, in one small function, when the
// library operation lands. Until then the pages do not offer them.

// errUnavailable is returned for a control the library does not offer yet.
var errUnavailable = errors.New("not available in this version of the library")

// pauseState is whether a task type is paused; Known is false while the
// library cannot tell.
type pauseState struct {
	Known, Paused bool
}

// pausedState reads whether a task type is paused.
// PLUG (pause/resume): return the library's paused flag here.
func (h *Handler) pausedState(ctx context.Context, taskType string) pauseState {
	return pauseState{}
}

// pauseAvailable turns the pause and resume buttons on.
// PLUG (pause/resume): set to true with setPaused below.
const pauseAvailable = false

// setPaused pauses or resumes a task type.
// PLUG (pause/resume): call the library's pause or resume here.
func (h *Handler) setPaused(ctx context.Context, taskType string, paused bool) error {
	return fmt.Errorf("pause %s: %w", taskType, errUnavailable)
}

// runNowAvailable turns the "run now" button of scheduled jobs on.
// PLUG (run-now): set to true with runNow below.
const runNowAvailable = false

// runNow makes a scheduled job vest now.
// PLUG (run-now): call the library's run-now here.
func (h *Handler) runNow(ctx context.Context, id quick.ID) error {
	return fmt.Errorf("run %s now: %w", id, errUnavailable)
}

// requeueByFilter requeues up to limit dead letters of a task type whose
// last error contains errContains, oldest first, and returns how many it
// requeued. Today it pages through quick.Queue.ListDead (a bounded range
// read per page) and calls quick.Queue.Requeue per job, one transaction
// each.
// PLUG (bulk requeue): call the library's bulk requeue by filter here, which
// batches the work into bounded transactions.
func (h *Handler) requeueByFilter(ctx context.Context, taskType, errContains string, limit int) (int, error) {
	return requeueDeadPaged(ctx, h.q, taskType, errContains, limit)
}

// statusOfControl maps errUnavailable to 501.
func statusOfControl(err error) int {
	if errors.Is(err, errUnavailable) {
		return http.StatusNotImplemented
	}
	return statusOf(err)
}
