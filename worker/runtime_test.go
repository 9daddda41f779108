package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

func TestTypedHandlerCompletes(t *testing.T) {
	e := newEnv(t, quick.Options{})
	got := make(chan string, 1)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := Register(w, func(ctx context.Context, j *Job[emailArgs]) error {
			got <- j.Args.To
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res, err := e.q.Insert(e.ctx, emailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := e.start(w)
	if to := <-got; to != "ada@example.com" {
		t.Fatalf("handler got %q", to)
	}
	e.waitFor("completion", func() bool { return w.Stats().Completed == 1 })
	if info := e.get(res.ID); info.State != quick.StateFinished {
		t.Fatalf("job state %v, want finished", info.State)
	}
	if err := e.stop(w, h); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s := w.Stats(); s.Claimed != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRegisterErrors(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(*Worker) {})
	h := func(context.Context, *RawJob) error { return nil }
	if err := RegisterRaw(w, "a", h, HandlerOptions{Lease: time.Second}); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, quick.ErrInvalidLease) {
		t.Fatalf("short lease: %v", err)
	}
	if err := RegisterRaw(w, "a", h, HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := RegisterRaw(w, "a", h, HandlerOptions{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("no queue: %v", err)
	}
}

// A job that runs for four leases is renewed by its worker, and a second
// worker watching the lanes never gets it.
func TestLeaseRenewalKeepsLongJob(t *testing.T) {
	e := newEnv(t, quick.Options{})
	g := newGate()
	var holders [2]atomic.Int32
	mk := func(i int) *Worker {
		return e.newWorker(Config{}, func(w *Worker) {
			if err := RegisterRaw(w, "long", func(ctx context.Context, j *RawJob) error {
				holders[i].Add(1)
				g.enter()
				select {
				case <-g.open:
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}, HandlerOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := mk(0), mk(1)
	res := e.enqueue(quick.NewJob{TaskType: "long"})
	e.start(a)
	e.start(b)
	<-g.ch
	e.settle(a, b)
	e.step(4*30*time.Second, 2*time.Second, a, b)
	if n := g.count(); n != 1 {
		t.Fatalf("handler started %d times, want 1 (the lease was not kept)", n)
	}
	info := e.get(res[0].ID)
	if info.State != quick.StateLeased || info.Attempt != 1 {
		t.Fatalf("job %+v, want leased on attempt 1", info)
	}
	holder := a
	if holders[1].Load() == 1 {
		holder = b
	}
	if info.Holder != holder.ID() {
		t.Fatalf("holder %q, want %q", info.Holder, holder.ID())
	}
	if s := holder.Stats(); s.Extensions < 4 || s.LeaseLost != 0 {
		t.Fatalf("holder stats %+v: want several renewals and no lost lease", s)
	}
	g.release()
	e.waitFor("completion", func() bool { return holder.Stats().Completed == 1 })
	if s := a.Stats().Claimed + b.Stats().Claimed; s != 1 {
		t.Fatalf("claimed %d times in all", s)
	}
}

// A worker that dies without cleanup keeps its job until the lease lapses;
// then another worker takes and runs it.
func TestKilledWorkerJobTakenAfterLease(t *testing.T) {
	e := newEnv(t, quick.Options{})
	started := make(chan *RawJob, 2)
	causes := make(chan error, 2)
	mk := func(block bool) *Worker {
		return e.newWorker(Config{}, func(w *Worker) {
			if err := RegisterRaw(w, "crashy", func(ctx context.Context, j *RawJob) error {
				started <- j
				if !block {
					return nil
				}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}, HandlerOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a := mk(true)
	res := e.enqueue(quick.NewJob{TaskType: "crashy"})
	ha := e.start(a)
	first := <-started
	if first.Lease.Attempt != 1 {
		t.Fatalf("attempt %d", first.Lease.Attempt)
	}
	a.kill()
	<-ha.done
	if !errors.Is(ha.err, ErrKilled) {
		t.Fatalf("Run after Kill returned %v", ha.err)
	}
	if c := <-causes; !errors.Is(c, ErrKilled) {
		t.Fatalf("handler cause %v", c)
	}
	if info := e.get(res[0].ID); info.State != quick.StateLeased || info.Holder != a.ID() {
		t.Fatalf("after kill: %+v, want still leased by the dead worker", info)
	}
	b := mk(false)
	e.start(b)
	e.settle(b)
	e.step(20*time.Second, 2*time.Second, b)
	if b.Stats().Claimed != 0 {
		t.Fatal("the job was taken before its lease lapsed")
	}
	e.step(30*time.Second, 2*time.Second, b)
	e.waitFor("the second worker to complete the job", func() bool { return b.Stats().Completed == 1 })
	second := <-started
	if second.Lease.Attempt != 2 || second.Lease.Holder != b.ID() {
		t.Fatalf("second run: attempt %d holder %q", second.Lease.Attempt, second.Lease.Holder)
	}
	if a.Stats().Completed != 0 || a.Stats().Released != 0 {
		t.Fatalf("killed worker acked: %+v", a.Stats())
	}
}

// Stop lets a job that finishes within ShutdownTimeout complete, releases
// the one that does not, and leaves nothing leased.
func TestGracefulShutdownLeavesNothingLeased(t *testing.T) {
	e := newEnv(t, quick.Options{})
	finishFast := make(chan struct{})
	g := newGate()
	causes := make(chan error, 1)
	w := e.newWorker(Config{ShutdownTimeout: 10 * time.Second}, func(w *Worker) {
		if err := RegisterRaw(w, "stop", func(ctx context.Context, j *RawJob) error {
			g.enter()
			if string(j.Args) == "fast" {
				<-finishFast
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "stop", Payload: []byte("fast")}, quick.NewJob{TaskType: "stop", Payload: []byte("slow")})
	h := e.start(w)
	<-g.ch
	<-g.ch
	if n := lanesLeased(t, e.q, "stop"); n != 2 {
		t.Fatalf("%d leased before stop", n)
	}
	close(finishFast)
	if err := e.stop(w, h); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c := <-causes; !errors.Is(c, ErrShutdown) {
		t.Fatalf("slow handler's cause %v, want ErrShutdown", c)
	}
	s := w.Stats()
	if s.Completed != 1 || s.Released != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v: want 1 completed, 1 released", s)
	}
	if n := lanesLeased(t, e.q, "stop"); n != 0 {
		t.Fatalf("%d jobs still leased after a clean stop", n)
	}
	js := jobsOf(t, e.q, "stop")
	if len(js) != 1 || js[0].ID != res[1].ID || js[0].State != quick.StateReady || js[0].Holder != "" || js[0].Attempt != 0 {
		t.Fatalf("after stop: %+v, want the slow job ready, unheld, no attempt spent", js)
	}
	if ps, err := ListWorkers(e.ctx, e.q, 10); err != nil || len(ps) != 0 {
		t.Fatalf("presence after a clean stop: %+v, %v", ps, err)
	}
}

// Acks that pile up while a commit is in flight go out in one commit: under
// load the worker commits less than once per job, claims included. Commits
// take FDB's 1.5-2.5 ms here (memkv with injected latency, or a real FDB
// with -tags fdb), so acks do pile up behind them.
func TestAcksAreBatched(t *testing.T) {
	var e *env
	if fdbkv.Built {
		e = newEnv(t, quick.Options{})
	} else {
		raw, space := fdbtest.OpenMem(t, memkv.Options{Latency: memkv.FDBLatency(), Seed: 1})
		e = newEnvOn(t, raw, space, quick.Options{})
	}
	const n = 200
	g := newGate()
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "batch", func(ctx context.Context, j *RawJob) error {
			g.enter()
			<-g.open
			return nil
		}, HandlerOptions{Concurrency: 50}); err != nil {
			t.Fatal(err)
		}
	})
	jobs := make([]quick.NewJob, n)
	for i := range jobs {
		jobs[i] = quick.NewJob{TaskType: "batch"}
	}
	e.enqueue(jobs...)
	e.start(w)
	e.settle(w)
	before := e.db.Stats()
	g.release()
	e.waitFor("every job to complete", func() bool { return w.Stats().Completed == n })
	d := e.db.Stats().Sub(before)
	s := w.Stats()
	t.Logf("%d jobs: %d ack commits, %d claim batches, db %v, %.2f commits/job", n, s.AckBatches, s.ClaimBatches, d, float64(d.Commits)/n)
	// docs/design.md documents about 0.07 commits a job; 0.2 leaves room
	// for a loaded machine and still fails acks batched 3 at a time (0.37).
	if per := float64(d.Commits) / n; per > 0.2 {
		t.Fatalf("%.2f commits per job, want at most 0.2", per)
	}
	if s.AckBatches > n/8 {
		t.Fatalf("%d ack commits for %d jobs: want at most %d (batches of 8 or more on average)", s.AckBatches, n, n/8)
	}
}

func TestPanicBecomesFailureWithStack(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "boom", panickyHandler, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "boom"})
	e.start(w)
	e.waitFor("the failure", func() bool { return w.Stats().Failed == 1 })
	info := e.get(res[0].ID)
	if info.State != quick.StateScheduled || info.Attempt != 1 {
		t.Fatalf("job %+v, want scheduled for a retry", info)
	}
	for _, want := range []string{"handler panicked", "kaboom", "panickyHandler", "runtime_test.go"} {
		if !strings.Contains(info.LastError, want) {
			t.Fatalf("LastError lacks %q:\n%s", want, info.LastError)
		}
	}
	if w.Stats().Panics != 1 {
		t.Fatalf("stats %+v", w.Stats())
	}
}

func panickyHandler(ctx context.Context, j *RawJob) error {
	var m map[string]int
	if len(j.Args) == 0 {
		panic("kaboom")
	}
	m["x"]++
	return nil
}

// worker.Cancel cancels (issue 26): the job is not a dead letter, and its
// retention keeps it as cancelled with the reason.
func TestSnoozeCancelAndFailure(t *testing.T) {
	e := newEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"mixed": {Retain: time.Hour}}})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "mixed", func(ctx context.Context, j *RawJob) error {
			switch string(j.Args) {
			case "snooze":
				return Snooze(time.Hour)
			case "cancel":
				return Cancel("not wanted")
			}
			return errors.New("plain failure")
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(
		quick.NewJob{TaskType: "mixed", Payload: []byte("snooze")},
		quick.NewJob{TaskType: "mixed", Payload: []byte("cancel")},
		quick.NewJob{TaskType: "mixed", Payload: []byte("fail")},
	)
	e.start(w)
	e.waitFor("three acks", func() bool {
		s := w.Stats()
		return s.Snoozed == 1 && s.Cancelled == 1 && s.Failed == 1
	})
	if s := w.Stats(); s.DeadLettered != 0 {
		t.Fatalf("stats %+v: a cancel counted as a dead letter", s)
	}
	sn := e.get(res[0].ID)
	if sn.State != quick.StateScheduled || sn.Attempt != 0 || !sn.RunAt.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("snoozed job %+v", sn)
	}
	if c := e.get(res[1].ID); c.State != quick.StateCancelled || c.LastError != "not wanted" || len(c.Errors) != 1 || c.Errors[0].Attempt != 1 {
		t.Fatalf("cancelled job %+v", c)
	}
	if f := e.get(res[2].ID); f.State != quick.StateScheduled || f.Attempt != 1 || f.LastError != "plain failure" {
		t.Fatalf("failed job %+v", f)
	}
}

func TestTypedDecodeFailureDeadLetters(t *testing.T) {
	e := newEnv(t, quick.Options{})
	var calls atomic.Int32
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := Register(w, func(ctx context.Context, j *Job[emailArgs]) error {
			calls.Add(1)
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "email", Payload: []byte("{not json")})
	e.start(w)
	e.waitFor("dead letter", func() bool { return w.Stats().DeadLettered == 1 })
	info := e.get(res[0].ID)
	if info.State != quick.StateDead || !strings.Contains(info.LastError, ErrDecode.Error()) {
		t.Fatalf("job %+v", info)
	}
	if calls.Load() != 0 {
		t.Fatal("handler called with undecodable args")
	}
}

// CompleteWith commits the handler's write with the completion; after the
// lease is lost, neither commits.
func TestCompleteWithExactlyOnce(t *testing.T) {
	e := newEnv(t, quick.Options{})
	effect := e.q.Root().Sub("test-effect")
	proceed := make(chan struct{}, 2)
	results := make(chan error, 2)
	started := make(chan quick.ID, 2)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "tx", func(ctx context.Context, j *RawJob) error {
			started <- j.Lease.ID
			<-proceed
			err := j.CompleteWith(ctx, func(tr kv.Transaction) error {
				tr.Set(effect.Pack(idTuple(j.Lease.ID)), []byte("done"))
				return nil
			})
			results <- err
			if err != nil {
				return err
			}
			return errors.New("ignored: the job is already complete")
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	readEffect := func(id quick.ID) []byte {
		var v []byte
		if err := e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
			var err error
			v, err = tr.Get(effect.Pack(idTuple(id))).Get()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	e.enqueue(quick.NewJob{TaskType: "tx"})
	e.start(w)

	// Held lease: effect and completion commit together.
	id := <-started
	proceed <- struct{}{}
	if err := <-results; err != nil {
		t.Fatalf("CompleteWith: %v", err)
	}
	if string(readEffect(id)) != "done" {
		t.Fatal("effect missing after CompleteWith")
	}
	if info := e.get(id); info.State != quick.StateFinished {
		t.Fatalf("job %+v, want finished", info)
	}
	e.waitFor("stats", func() bool { return w.Stats().Completed == 1 })

	// Lost lease (the job was cancelled under the handler): neither.
	e.enqueue(quick.NewJob{TaskType: "tx"})
	id2 := <-started
	if err := e.q.Cancel(e.ctx, id2); err != nil {
		t.Fatal(err)
	}
	proceed <- struct{}{}
	if err := <-results; !errors.Is(err, quick.ErrLeaseLost) {
		t.Fatalf("CompleteWith after losing the lease: %v", err)
	}
	if v := readEffect(id2); v != nil {
		t.Fatal("the effect committed without the lease")
	}
	e.waitFor("lease loss counted", func() bool { return w.Stats().LeaseLost == 1 })
	s := w.Stats()
	if s.Completed != 1 || s.Failed != 0 {
		t.Fatalf("stats %+v: the worker acked after CompleteWith or after a lost lease", s)
	}
}

// A renewal that finds the lease lost cancels the handler's context, and
// the worker acks nothing for the job.
func TestLostLeaseCancelsHandler(t *testing.T) {
	e := newEnv(t, quick.Options{})
	started := make(chan quick.ID, 1)
	causes := make(chan error, 1)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "lost", func(ctx context.Context, j *RawJob) error {
			started <- j.Lease.ID
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return errors.New("would fail the job if acked")
		}, HandlerOptions{Lease: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "lost"})
	e.start(w)
	id := <-started
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	e.settle(w)
	e.step(25*time.Second, 5*time.Second, w) // past the renewal point
	if c := <-causes; !errors.Is(c, quick.ErrLeaseLost) {
		t.Fatalf("cause %v, want a lost lease", c)
	}
	e.waitFor("the handler to return", func() bool { return w.Stats().Running == 0 })
	e.settle(w)
	s := w.Stats()
	if s.LeaseLost != 1 || s.Failed != 0 || s.AckBatches != 0 {
		t.Fatalf("stats %+v: want one lost lease and no ack", s)
	}
	if _, err := e.q.Get(e.ctx, id); err != nil && !quick.IsNotFound(err) {
		t.Fatal(err)
	}
}

func TestHandlerTimeoutFailsJob(t *testing.T) {
	e := newEnv(t, quick.Options{})
	causes := make(chan error, 1)
	started := make(chan struct{}, 1)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "slow", func(ctx context.Context, j *RawJob) error {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return context.Cause(ctx)
		}, HandlerOptions{Timeout: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "slow"})
	e.start(w)
	// The handler itself, not Stats().Running: Running counts the job
	// before its goroutine has set the timeout's timer on the fake clock,
	// and advancing the clock before that made the test hang.
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("the job did not run")
	}
	e.settle(w)
	e.step(4*time.Second, time.Second, w)
	if c := <-causes; !errors.Is(c, ErrHandlerTimeout) {
		t.Fatalf("cause %v", c)
	}
	e.waitFor("the failure", func() bool { return w.Stats().Failed == 1 })
	if info := e.get(res[0].ID); !strings.Contains(info.LastError, "timed out") {
		t.Fatalf("LastError %q", info.LastError)
	}
}

func TestCheckpointKeepsProgress(t *testing.T) {
	e := newEnv(t, quick.Options{})
	seen := make(chan string, 2)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "ckpt", func(ctx context.Context, j *RawJob) error {
			seen <- string(j.Lease.Checkpoint)
			if len(j.Lease.Checkpoint) == 0 {
				if err := j.Checkpoint(ctx, []byte("half")); err != nil {
					return err
				}
				if string(j.Lease.Checkpoint) != "half" {
					return errors.New("Lease not updated by Checkpoint")
				}
				return errors.New("fail after the checkpoint")
			}
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "ckpt"})
	e.start(w)
	if s := <-seen; s != "" {
		t.Fatalf("first run saw %q", s)
	}
	e.waitFor("the failure", func() bool { return w.Stats().Failed == 1 })
	e.settle(w)
	e.step(2*time.Minute, 10*time.Second, w) // the test backoff is attempt × 1 min
	if s := <-seen; s != "half" {
		t.Fatalf("retry saw checkpoint %q", s)
	}
	e.waitFor("completion", func() bool { return w.Stats().Completed == 1 })
}

func idTuple(id quick.ID) []any { return []any{id.String()} }
