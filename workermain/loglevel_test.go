package workermain

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// TestRoutineClaimsLogAtDebug: a worker that starts, claims and runs a job
// and stops logs only its start and stop at INFO (and, on the in-memory
// engine, the warning that it is). Claiming after the wait
// for the first heartbeat was INFO ("worker: claiming again", on every start
// of every task type whose claimer ran before the first beat: whether it
// does depends on scheduling, so this test only catches it when it does).
func TestRoutineClaimsLogAtDebug(t *testing.T) {
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		var stderr bytes.Buffer
		err := RunMain(func(w *worker.Worker) error {
			if err := worker.RegisterRaw(w, "routine", func(ctx context.Context, j *worker.RawJob) error {
				cancel()
				return nil
			}, worker.HandlerOptions{}); err != nil {
				return err
			}
			_, err := w.Queue().Enqueue(ctx, quick.NewJob{TaskType: "routine"})
			return err
		}, MainOptions{AllowEmbedded: true, Args: []string{"-embedded", "-log-level", "info"}, Context: ctx, Stderr: &stderr})
		cancel()
		if err != nil {
			t.Fatalf("RunMain: %v", err)
		}
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			routine := true
			for _, ok := range []string{"worker: starting", "worker: stopping", "worker: stopped", "worker: exiting", "IN-MEMORY ENGINE"} {
				if strings.Contains(l, ok) {
					routine = false
				}
			}
			if routine {
				t.Errorf("-log-level info logs a routine event: %s", l)
			}
		}
	}
}
