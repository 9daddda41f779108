package worker

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// After a maybe-committed DeadLetterWith, the worker asks whether the job is
// dead-lettered by this call. A dead letter written by another worker that
// claimed the job after this run's lease lapsed is not this call's: before,
// any dead job counted, and a failed DeadLetterWith reported success.
func TestReachedCountsOnlyThisRunsDeadLetter(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "reach", noopRaw, HandlerOptions{Lease: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	})
	r := w.byType["reach"]
	claim := func(holder string) quick.Lease {
		t.Helper()
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "reach", Holder: holder, Lease: 10 * time.Second})
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("claim: %+v, %v", res, err)
		}
		return res.Jobs[0]
	}
	e.enqueue(quick.NewJob{TaskType: "reach"}, quick.NewJob{TaskType: "reach", RunAt: e.clk.Now().Add(time.Hour)})

	// This run's lease lapses; another worker claims the job and
	// dead-letters it.
	mine := r.newState(claim(w.ID()))
	e.clk.Advance(11 * time.Second)
	theirs := claim("other")
	if theirs.ID != mine.first.ID {
		t.Fatalf("claimed %s, want %s", theirs.ID, mine.first.ID)
	}
	if err := e.q.DeadLetter(e.ctx, theirs, "their reason"); err != nil {
		t.Fatal(err)
	}
	if mine.reached(e.ctx, quick.AckDeadLetter, "my reason") {
		t.Fatal("another worker's dead letter counted as this run's")
	}

	// This run's own dead letter counts.
	e.clk.Advance(time.Hour)
	own := claim(w.ID())
	st := r.newState(own)
	if err := e.q.DeadLetter(e.ctx, own, "my reason"); err != nil {
		t.Fatal(err)
	}
	if !st.reached(e.ctx, quick.AckDeadLetter, "my reason") {
		t.Fatal("this run's own dead letter not recognised")
	}
}
