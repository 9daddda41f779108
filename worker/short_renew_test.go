package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// Issue 22's audit: a worker that never renews a held short-job lane
// survived every suite; its lane lease lapses under the jobs it runs and a
// takeover runs them again. Here a worker holds a busy lane in short-job
// mode and its renewal falls due while every job it holds is younger than
// half a lane lease (none is moved to a lease of its own): it must renew
// the lane. Another claimer whose clock reads past the lane's first
// deadline, but not past the renewed one, then finds nothing to take.
//
// The worker's clock stands still after the renewal; only the other
// claimer's clock is ahead, so no hand-back can race the takeover.
func TestShortLaneRenewedWhileItsJobsRun(t *testing.T) {
	opts := zonesOptions("renew")
	opts.ZoneLanes, opts.MaxZoneLanes = 1, 1 // one lane: the worker holds every job
	e := newClockedEnv(t, opts)
	pl := e.q.Options().LaneLeaseTime
	jobs := make([]quick.NewJob, 10)
	for i := range jobs {
		jobs[i] = quick.NewJob{TaskType: "renew", ItemSpace: "busy"}
	}
	e.enqueue(jobs...)

	type run struct {
		id   quick.ID
		done chan struct{}
	}
	started := make(chan run, len(jobs))
	w := e.newWorker(Config{ID: "holder"}, func(w *Worker) {
		if err := RegisterRaw(w, "renew", func(ctx context.Context, j *RawJob) error {
			r := run{id: j.Lease.ID, done: make(chan struct{})}
			started <- r
			select {
			case <-r.done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	next := func() run {
		t.Helper()
		select {
		case r := <-started:
			return r
		case <-time.After(waitLimit):
			t.Fatal("timed out waiting for a handler to start")
			return run{}
		}
	}
	e.start(w)
	first := next() // the lane taken at epoch, its lease until epoch + pl
	e.settle(w)
	if held := w.byType["renew"].shorts.held(); held != 1 {
		t.Fatalf("%d short lanes held, want 1", held)
	}

	// Later, the first two jobs end; the jobs then running and waiting are
	// handed out by claims that continue on the held lane.
	e.step(2*time.Second, time.Second, w)
	close(first.done)
	second := next()
	close(second.done)
	running := map[quick.ID]bool{next().id: true}
	e.settle(w)
	r := w.byType["renew"]
	r.mu.Lock()
	for _, st := range r.waiting {
		running[st.first.ID] = true
	}
	r.mu.Unlock()

	// The renewal falls due (a third of the lane lease left); the jobs held
	// have run under half a lane lease, so the lane is renewed, not handed
	// back.
	e.clk.Advance(pl - pl/3 - 2*time.Second + pl/10)
	e.settle(w)
	if held := r.shorts.held(); held != 1 {
		t.Fatalf("%d short lanes held after the renewal fell due, want 1 (the lane was handed back: the test no longer exercises the renewal)", held)
	}

	// Another claimer, its clock past the lane's first deadline (epoch +
	// pl) and before the renewed one (now + pl).
	other := clock.NewFake(e.clk.Now().Add(pl / 2))
	oo := opts
	oo.Clock, oo.Logger = other, testLogger()
	q2, err := quick.Open(e.ctx, e.db, e.space, oo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q2.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "renew", Holder: "other", Max: len(jobs)})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Jobs {
		if running[l.ID] {
			t.Fatalf("job %s, running on the lane's holder, was taken over (attempt %d): the holder did not renew its lane", l.ID, l.Attempt)
		}
	}
	if len(res.Jobs) != 0 {
		t.Fatalf("another claimer took %d jobs of a lane still held", len(res.Jobs))
	}
}
