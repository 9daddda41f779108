package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A handler's own Backoff and MaxAttempts apply to its kind, over the
// queue's (whose Backoff here is attempt x 1 min and MaxAttempts 25).
func TestHandlerBackoffAndMaxAttempts(t *testing.T) {
	e := newEnv(t, quick.Options{})
	var calls []int
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "flaky", func(ctx context.Context, j *RawJob) error {
			calls = append(calls, j.Lease.Attempt)
			return errors.New("still broken")
		}, HandlerOptions{Concurrency: 1, Backoff: func(int) time.Duration { return 7 * time.Minute }, MaxAttempts: 2}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "flaky"})
	e.start(w)
	e.waitFor("first failure", func() bool { return w.Stats().Failed == 1 })
	if f := e.get(res[0].ID); f.State != quick.StateScheduled || f.Attempt != 1 || !f.RunAt.Equal(epoch.Add(7*time.Minute)) {
		t.Fatalf("after the first failure %+v, want it rescheduled 7 min on (the handler's backoff)", f)
	}
	e.settle(w)
	e.step(7*time.Minute, time.Minute, w)
	e.waitFor("dead letter", func() bool { return w.Stats().DeadLettered == 1 })
	d := e.get(res[0].ID)
	if d.State != quick.StateDead || !strings.Contains(d.LastError, "MaxAttempts 2") || !strings.Contains(d.LastError, "still broken") {
		t.Fatalf("after the second failure %+v, want it dead with the handler's limit named", d)
	}
}

func TestHandlerPolicyValidated(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.newWorker(Config{}, func(w *Worker) {
		err := RegisterRaw(w, "x", func(context.Context, *RawJob) error { return nil }, HandlerOptions{MaxAttempts: -1})
		if !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("negative MaxAttempts: %v", err)
		}
	})
}
