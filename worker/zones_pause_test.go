package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Issue 22's audit: the zones runner ignoring Pause survived every suite
// (no test paused a zones queue). A zones worker claims nothing of a paused
// task type, in either claim mode, and claims again once it is resumed.
func TestZonesPausedTypeNotClaimed(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("email")
			}
			e := newEnv(t, opts)
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
		})
	}
}
