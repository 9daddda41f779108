package killcheck

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// The scenario's logic, in one process on the embedded engine: the job
// handler, the producer, a worker killed (simulated crash) while its job
// blocks after a checkpoint, the survivor finishing everything from the
// checkpoint, and the checker passing. The real thing (processes, SIGKILL,
// a restarted fdbserver) needs FoundationDB: scripts/fdb-kill-check.

type inproc struct {
	t    *testing.T
	ctx  context.Context
	clk  *clock.Fake
	q    *quick.Queue
	keys Keys

	mu       sync.Mutex
	progress map[string]*Progress
}

func newInproc(t *testing.T) *inproc { return newInprocWith(t, LayoutZones) }

// newInprocWith opens the queue with QueueOptions(layout), as the
// scenarios' processes do.
func newInprocWith(t *testing.T, layout Layout) *inproc {
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	db := memkv.Open(memkv.Options{Clock: clk, Wait: clk})
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	qs, keys := Spaces(tuple.FromTuple(tuple.Tuple{"killcheck", "test"}))
	qo := QueueOptions(layout)
	qo.Clock = clk
	q, err := quick.Open(ctx, db, qs, qo)
	if err != nil {
		t.Fatal(err)
	}
	return &inproc{t: t, ctx: ctx, clk: clk, q: q, keys: keys, progress: map[string]*Progress{}}
}

func (e *inproc) emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.progress[ev.Worker]
	if p == nil {
		p = NewProgress()
		e.progress[ev.Worker] = p
	}
	p.Add(ev)
}

func (e *inproc) of(w string) *Progress {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.progress[w]; p != nil {
		return p.Clone()
	}
	return NewProgress()
}

type running struct {
	w    *worker.Worker
	done chan error
}

func (e *inproc) start(id string) *running { return e.startWith(id, 4, false) }

// startWith starts a worker of slots slots whose handler has HangShort.
func (e *inproc) startWith(id string, slots int, hangShort bool) *running {
	w, err := worker.New(worker.Config{Queue: e.q, ID: id, DefaultConcurrency: slots})
	if err != nil {
		e.t.Fatal(err)
	}
	h := &Handler{Keys: e.keys, Clock: e.clk, Emit: e.emit, HangShort: hangShort}
	if err := h.Register(w, worker.HandlerOptions{Lease: quick.MinLease}); err != nil {
		e.t.Fatal(err)
	}
	r := &running{w: w, done: make(chan error, 1)}
	go func() { r.done <- w.Run(context.Background()) }()
	return r
}

// drive advances the fake clock until cond holds (failing after a minute
// of real time: a hang, not a timing assertion).
func (e *inproc) drive(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		e.clk.Advance(100 * time.Millisecond)
		select {
		case <-e.clk.Changed():
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (e *inproc) stop(r *running) {
	e.t.Helper()
	stopped := make(chan error, 1)
	go func() { stopped <- r.w.Stop(context.Background()) }()
	e.drive("the worker to stop", func() bool {
		select {
		case err := <-stopped:
			if err != nil {
				e.t.Errorf("stop: %v", err)
			}
			return true
		default:
			return false
		}
	})
	if err := <-r.done; err != nil {
		e.t.Errorf("run: %v", err)
	}
}

// produce inserts jobs, advancing the fake clock meanwhile: a conflict
// with a worker's sleep registration backs off on it.
func (e *inproc) produce(jobs []Steps) []quick.ID {
	e.t.Helper()
	var ids []quick.ID
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ids, err = Produce(e.ctx, e.q, e.keys, jobs)
	}()
	e.drive("the producer", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

func (e *inproc) completedAll(n int) func() bool {
	return func() bool {
		rec, err := ReadRecords(e.ctx, e.q.DB(), e.keys)
		if err != nil {
			e.t.Fatal(err)
		}
		return len(rec.Count) >= n
	}
}

// runScenario runs the worker-kill scenario in process and returns the
// jobs and the expectations the checker gets.
func runScenario(t *testing.T) (*inproc, Expect) {
	e := newInproc(t)
	w1, w2 := e.start("w1"), e.start("w2")
	const n, steps, hangAt = 8, 4, 2
	jobs := make([]Steps, n)
	for i := range jobs {
		jobs[i] = Steps{Seq: i, N: steps, StepMs: 1000}
	}
	jobs[0].HangAt = hangAt
	ids := e.produce(jobs)
	victim, survivor, victimID := w1, w2, ""
	e.drive("the first job to block after its checkpoint", func() bool {
		for _, w := range []string{"w1", "w2"} {
			if _, ok := e.of(w).Hang[ids[0]]; ok {
				victimID = w
				return true
			}
		}
		return false
	})
	if victimID == "w2" {
		victim, survivor = w2, w1
	}
	testhooks.KillWorker(victim.w)
	<-victim.done
	resumes := map[quick.ID]Resume{}
	for id, last := range e.of(victimID).Unfinished() {
		r := Resume{Min: last, Max: min(last+1, steps), Killed: victimID}
		if id == ids[0] {
			r.Max = last
		}
		resumes[id] = r
	}
	if got := resumes[ids[0]]; got.Min != hangAt {
		t.Fatalf("the blocked job's last checkpoint on %s: %+v, want %d", victimID, got, hangAt)
	}
	e.drive("the survivor to complete every job", e.completedAll(n))
	e.stop(survivor)
	return e, Expect{IDs: ids, Resumes: resumes}
}

// The short-batch scenario in process: two workers of the task type in
// short-job mode, both blocking every job handed out under a short lane
// lease; the one that leased the lane is handed the whole batch and killed
// (no ack, no hand-back); the other takes the lane over once its lease
// lapses and completes every job with per-job leases, at attempt 2: the
// dead worker's runs are counted (quick's hand-out mark), though nothing
// was written per job when they were handed out.
func TestShortBatchKillInProcess(t *testing.T) {
	e := newInprocWith(t, LayoutShort)
	w1, w2 := e.startWith("w1", ShortBatchSlots, true), e.startWith("w2", ShortBatchSlots, true)
	jobs := make([]Steps, ShortBatchJobs)
	for i := range jobs {
		jobs[i] = Steps{Seq: i, N: 3, StepMs: 1000}
	}
	ids := e.produce(jobs)
	victim, survivor, victimID := w1, w2, ""
	e.drive("one worker to be handed the whole batch", func() bool {
		for _, w := range []string{"w1", "w2"} {
			if n := len(e.of(w).Hang); n > 0 {
				victimID = w
				return n == len(ids)
			}
		}
		return false
	})
	if victimID == "w2" {
		victim, survivor = w2, w1
	}
	survivorID := map[string]string{"w1": "w2", "w2": "w1"}[victimID]
	if n := len(e.of(survivorID).Hang); n > 0 {
		t.Fatalf("%s was handed %d jobs under a short lease too: the batch was split", survivorID, n)
	}
	testhooks.KillWorker(victim.w)
	<-victim.done
	resumes := ShortBatchResumes(victimID, e.of(victimID))
	if len(resumes) != len(ids) {
		t.Fatalf("%s was running %d jobs when killed, want all %d", victimID, len(resumes), len(ids))
	}
	e.drive("the survivor to complete every job", e.completedAll(len(ids)))
	if n := len(e.of(survivorID).Hang); n > 0 {
		t.Fatalf("%s was handed %d jobs under a short lease at attempt 1 after the takeover", survivorID, n)
	}
	e.stop(survivor)
	r, err := Check(e.ctx, e.q, e.keys, Expect{IDs: ids, Resumes: resumes})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("problems: %q", r.Problems)
	}
	text := strings.Join(r.Checked, "\n")
	for _, want := range []string{"8/8 jobs completed exactly once", "by attempt: 2 8", "listing is empty", "ran it from the start at attempt 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	t.Log("\n" + text)
}

func TestWorkerKillInProcess(t *testing.T) {
	e, exp := runScenario(t)
	r, err := Check(e.ctx, e.q, e.keys, exp)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("problems: %q", r.Problems)
	}
	text := strings.Join(r.Checked, "\n")
	for _, want := range []string{"8 jobs inserted", "8/8 jobs completed exactly once", "listing is empty", "resumed it from step 2 at attempt 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	t.Log("\n" + text)
}

// The checker catches what it is for: a job completed twice, a lost job,
// a wrong resume point, a completion that vanished.
func TestCheckCatches(t *testing.T) {
	e, exp := runScenario(t)
	twice, lost := exp.IDs[1], exp.IDs[2]
	err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Add(e.keys.Count(twice), one)
		tr.Clear(e.keys.Done(lost))
		tr.Clear(e.keys.Count(lost))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A job inserted and never run.
	extra := e.produce([]Steps{{Seq: 99, N: 3, StepMs: 1}})
	exp.IDs = append(exp.IDs, extra...)
	exp.Resumes[exp.IDs[0]] = Resume{Min: 3, Max: 3, Killed: "w-none"}
	exp.Before = map[quick.ID]Done{lost: {Worker: "w1", Attempt: 1}}
	r, err := Check(e.ctx, e.q, e.keys, exp)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(r.Problems, "\n")
	for _, want := range []string{
		twice.String() + ": completed 2 times",
		lost.String() + ": LOST",
		extra[0].String() + ": LOST",
		extra[0].String() + ": still in the queue",
		exp.IDs[0].String() + ": completed by",
		"completion record before the server kill",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
}

func TestEventLines(t *testing.T) {
	id := quick.NewID(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for _, e := range []Event{
		{Kind: EventCheckpoint, Worker: "w1", Job: id, Attempt: 2, Step: 5},
		{Kind: EventReady, Worker: "w2"},
		{Kind: EventEnqueued, Job: id},
	} {
		got, err := ParseEvent(e.String())
		if err != nil || got != e {
			t.Errorf("ParseEvent(%q) = %+v, %v; want %+v", e.String(), got, err, e)
		}
	}
	for _, bad := range []string{"", "KC", "time=... level=INFO msg=x", "KC nope w1 " + id.String() + " 1 1", "KC done w1 zz 1 1", "KC done w1 " + id.String() + " x 1"} {
		if _, err := ParseEvent(bad); err == nil {
			t.Errorf("ParseEvent(%q) accepted", bad)
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add("KC done w1 0192f1a0-0000-7000-8000-000000000000 1 8")
	f.Add("KC ready w2 00000000-0000-0000-0000-000000000000 0 0")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseEvent(line)
		if err != nil {
			return
		}
		again, err := ParseEvent(e.String())
		if err != nil || again != e {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", line, e, e.String(), again, err)
		}
	})
}

// Without the fdb tag the run role says how to get it; an unknown
// scenario is refused before anything starts.
func TestRunNeeds(t *testing.T) {
	// With the tag the config is checked for a real run instead (here: no
	// jobs asked for), so the "not built" error is only expected without.
	if !fdbkv.Built {
		if err := Run(context.Background(), Config{Scenarios: []string{"worker-kill"}, ShortBatch: true}); !errors.Is(err, fdbkv.ErrNotBuilt) {
			t.Errorf("-short-batch without the fdb tag: %v", err)
		}
	}
	if err := Run(context.Background(), Config{Scenarios: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("unknown scenario: %v", err)
	}
	if err := Main(context.Background(), []string{"nope"}, nil, nil); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("unknown role: %v", err)
	}
}
