package worker

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/kvfake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// A CompleteWith whose commit a timeout (or cancel) struck in flight,
// without applying, is not the end of the run: FDB retries neither 1031 nor
// 1025, so finishing takes a fresh transaction, which still holds the lease
// and completes the job with its effect, once. Before, the handler got the
// error, the worker acked a failure, and a job on its last attempt was
// dead-lettered although its handler had succeeded.
func TestCompleteWithSurvivesATimeoutInCommit(t *testing.T) {
	for _, code := range []int{1031, 1025} {
		raw, space := fdbtest.OpenMem(t, memkv.Options{})
		effect := space.Sub("effect").Pack(nil)
		fw := &kvfake.FailWrite{Database: raw, Target: effect, Err: kv.Error{Code: code, DuringCommit: true}}
		e := newEnvOn(t, fw, space, quick.Options{})
		done := make(chan error, 1)
		w := e.newWorker(Config{}, func(w *Worker) {
			if err := RegisterRaw(w, "tx", func(ctx context.Context, j *RawJob) error {
				fw.Arm()
				err := j.CompleteWith(ctx, func(tr kv.Transaction) error {
					tr.Set(effect, []byte("done"))
					return nil
				})
				done <- err
				return err
			}, HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		res := e.enqueue(quick.NewJob{TaskType: "tx", MaxAttempts: 1})
		e.start(w)
		if err := <-done; err != nil {
			t.Fatalf("%d in commit: CompleteWith: %v", code, err)
		}
		if fw.Failed.Load() != 1 {
			t.Fatalf("%d in commit: %d commits failed, want 1", code, fw.Failed.Load())
		}
		if info := e.get(res[0].ID); info.State != quick.StateFinished {
			t.Fatalf("%d in commit: job %+v, want finished (not dead-lettered)", code, info)
		}
		e.waitFor("the completion counted", func() bool { return w.Stats().Completed == 1 })
		if s := w.Stats(); s.Failed != 0 || s.DeadLettered != 0 {
			t.Fatalf("%d in commit: stats %+v", code, s)
		}
	}
}
