package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TestPausedTypeNotClaimed: a worker claims nothing of a paused task type,
// whatever time passes (it makes no claim transaction at all), and claims
// again once it is resumed.
func TestPausedTypeNotClaimed(t *testing.T) {
	e := newEnv(t, quick.Options{})
	if err := e.q.Pause(e.ctx, "email"); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 10)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "email", func(ctx context.Context, j *RawJob) error {
			ran <- struct{}{}
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "email"})
	e.start(w)
	e.waitFor("the pause to be read", func() bool { p, known := w.pause.isPaused("email"); return p && known })
	e.step(10*time.Second, 500*time.Millisecond, w)
	// Not even an empty claim transaction: the claim loop does not reach
	// the database while its type is paused.
	if s := w.Stats(); s.Claimed != 0 || s.ClaimBatches+s.EmptyClaims != 0 || s.Refused == 0 {
		t.Fatalf("paused: stats %+v", s)
	}

	if err := e.q.Resume(e.ctx, "email"); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the resume to be read", func() bool { p, _ := w.pause.isPaused("email"); return !p })
	e.step(2*time.Second, 500*time.Millisecond, w)
	select {
	case <-ran:
	case <-time.After(waitLimit):
		t.Fatal("the job did not run after Resume")
	}
	e.waitFor("the claim", func() bool { return w.Stats().Claimed == 1 })
}
