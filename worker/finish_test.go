package worker

import (
	"context"
	"runtime"
	"testing"
	"time"

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
		if err := recv(e, "the handler's CompleteWith", done); err != nil {
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

// A CompleteWith whose commit a timeout struck without applying, and whose
// lease lapsed and was claimed again before the retry, did not complete the
// job. For a job of an Untracked type the queue cannot look the job
// up to tell, so CompleteWith must not claim success: it returns the lost
// lease with the unknown outcome (kv.IsMaybeCommitted). It used to return
// nil, with fn's writes not committed and the job running elsewhere.
func TestCompleteWithUnknownOutcomeOfAnUntrackableJob(t *testing.T) {
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	effect := space.Sub("effect").Pack(nil)
	fw := &kvfake.FailWrite{Database: raw, Target: effect, Err: kv.Error{Code: 1031, DuringCommit: true}}
	e := newEnvOn(t, fw, space, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"tx": {Untracked: true}}})
	first := make(chan error, 1) // the first attempt's CompleteWith
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "tx", func(ctx context.Context, j *RawJob) error {
			if j.Lease.Attempt > 1 {
				return nil // the run after the lapse: completes the job
			}
			fw.Arm()
			calls := 0
			err := j.CompleteWith(ctx, func(tr kv.Transaction) error {
				tr.Set(effect, []byte("done"))
				if calls++; calls == 1 {
					// Before this attempt's commit (which fails, not
					// applied), the lease lapses and the job is claimed
					// again: by this claim, or by the worker's own
					// claim loop, which the clock wakes first.
					e.clk.Advance(2 * time.Minute)
					bound := time.Now().Add(30 * time.Second) // a failure bound, not a measurement
					for w.Stats().Claimed < 2 && time.Now().Before(bound) {
						res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "tx", Holder: "other", Max: 1})
						if err != nil {
							t.Errorf("the other claim: %v", err)
							break
						}
						if len(res.Jobs) == 1 {
							break
						}
						// The worker's loop holds the lane: its claim is
						// about to commit.
						runtime.Gosched()
					}
				}
				return nil
			})
			first <- err
			return err
		}, HandlerOptions{Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "tx"})
	e.start(w)
	err := recv(e, "the first run's CompleteWith", first)
	if err == nil {
		t.Fatal("CompleteWith reported success; its writes did not commit and the job runs elsewhere")
	}
	if !quick.IsLeaseLost(err) || !kv.IsMaybeCommitted(err) {
		t.Fatalf("CompleteWith: %v; want a lost lease with the outcome unknown", err)
	}
	var v []byte
	if err := raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) (err error) {
		v, err = tr.Get(effect).Get()
		return err
	}); err != nil || v != nil {
		t.Fatalf("the effect: %q, %v; want none", v, err)
	}
}
