package cron

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// noRepairWorker is a worker without duties: no repair restores a chain
// the test breaks, so a missing successor shows.
func (e *env) noRepairWorker(id string) *worker.Worker {
	e.t.Helper()
	w, err := worker.New(worker.Config{Queue: e.q, ID: id, Clock: e.clk, Logger: quietLogger(), HeartbeatPeriod: 24 * time.Hour, DisableDuties: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// runWorker runs w until the test ends, and returns a driver that
// describes it when a wait times out.
func (e *env) runWorker(w *worker.Worker) *clockDriver {
	e.t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	e.t.Cleanup(func() { testhooks.KillWorker(w); <-done })
	return &clockDriver{t: e.t, e: e, workers: []*worker.Worker{w}}
}

// TestCancelledOccurrenceIsCancelledAndTheChainGoesOn: a handler that
// returns worker.Cancel ends its occurrence as any job's Cancel does
// (cancelled: not a dead letter), and the same transaction schedules the
// next occurrence, exactly one: a cancel ends the run, not the schedule.
// Before, cron dead-lettered a cancelled occurrence.
func TestCancelledOccurrenceIsCancelledAndTheChainGoesOn(t *testing.T) {
	e := newEnv(t, nil)
	w := e.noRepairWorker("w")
	var (
		mu  sync.Mutex
		ran []Occurrence
	)
	if err := Handle(w, "tick", func(_ context.Context, occ Occurrence) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, occ)
		if len(ran) == 1 {
			return worker.Cancel("not today")
		}
		return nil
	}, worker.HandlerOptions{Lease: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"})
	d := e.runWorker(w)

	e.clk.Set(epoch.Add(time.Minute))
	d.until("the cancelled occurrence's successor", func() bool { return e.nextAt("tick").Equal(epoch.Add(2 * time.Minute)) })
	d.until("the cancel counted", func() bool { return w.Stats().Cancelled == 1 })
	if s := w.Stats(); s.DeadLettered != 0 || s.Completed != 0 || s.Failed != 0 {
		t.Fatalf("stats after the cancel: %+v, want one cancelled and nothing else", s)
	}
	if n, err := e.q.DeadCount(e.ctx, "tick"); err != nil || n != 0 {
		t.Fatalf("dead letters %d (%v), want none: a cancelled occurrence is not a dead letter", n, err)
	}
	mu.Lock()
	first := ran[0]
	mu.Unlock()
	if info, err := e.q.Get(e.ctx, first.JobID); !quick.IsNotFound(err) && (err != nil || info.State != quick.StateFinished) {
		t.Fatalf("the cancelled occurrence: %+v %v, want it gone (cancelled without retention)", info, err)
	}
	if js := e.jobs("tick"); len(js) != 1 {
		t.Fatalf("%d occurrences pending, want exactly one: %+v", len(js), js)
	}

	// The chain carries on from there.
	e.clk.Set(epoch.Add(2 * time.Minute))
	d.until("the next occurrence to complete", func() bool { return e.nextAt("tick").Equal(epoch.Add(3 * time.Minute)) })
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || !ran[1].ScheduledAt.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("ran %+v, want the cancelled minute 1 then minute 2", ran)
	}
}

// TestFailedCancelKeepsTheChain: the transaction that cancels an
// occurrence, with its successor, fails. The occurrence must not then be
// cancelled without a successor: it runs again (no attempt spent), and its
// second cancel carries the successor.
func TestFailedCancelKeepsTheChain(t *testing.T) {
	var db *armedDB
	e := newEnv(t, func(inner kv.Database) kv.Database {
		db = &armedDB{Database: inner, err: kv.ErrTransactionTooLarge}
		return db
	})
	db.target = defKey(e.q, "tick")
	w := e.noRepairWorker("w")
	var runs atomic.Int64
	if err := Handle(w, "tick", func(context.Context, Occurrence) error {
		if runs.Add(1) == 1 {
			db.armed.Store(true)
		}
		return worker.Cancel("not today")
	}, worker.HandlerOptions{Lease: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	d := e.runWorker(w)
	e.clk.Set(epoch.Add(time.Minute))
	d.until("the occurrence to be cancelled", func() bool { return w.Stats().Cancelled == 1 })
	if x := e.entry("tick"); !x.Alive || !x.Next.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("after a cancel whose first transaction failed: %+v, want the next at %v", x, epoch.Add(2*time.Minute))
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the failed cancel runs it again)", n)
	}
	if n, err := e.q.DeadCount(e.ctx, "tick"); err != nil || n != 0 {
		t.Fatalf("dead letters %d (%v), want none", n, err)
	}
}

// A typed periodic job with transactional effects: the handler's writes
// commit with the occurrence's completion and its successor, and it gets
// the decoded args. An occurrence whose payload does not decode (the
// schedule re-registered with other bytes) is dead-lettered at once, not
// cancelled nor retried, and the schedule goes on.
func TestNewPeriodicJobTx(t *testing.T) {
	e := newEnv(t, nil)
	effect := e.q.Root().Sub("effect").Pack(nil)
	var runs atomic.Int64
	j := NewPeriodicJobTx(Schedule{Spec: "* * * * *"}, reportArgs{Team: "ops"}, func(_ context.Context, r *Run[reportArgs]) (func(kv.Transaction) error, error) {
		runs.Add(1)
		return func(tr kv.Transaction) error {
			tr.Set(effect, []byte(r.Args.Team+" "+r.ScheduledAt.UTC().Format(time.RFC3339)))
			return nil
		}, nil
	}, worker.HandlerOptions{Lease: 30 * time.Second, MaxAttempts: 3})
	if j.HandlerTx == nil || j.Handler != nil {
		t.Fatalf("NewPeriodicJobTx declared %+v, want a HandlerTx only", j)
	}
	w := e.noRepairWorker("w")
	if err := Periodic(e.ctx, w, j); err != nil {
		t.Fatal(err)
	}
	if en := e.entry("report"); !en.Alive || en.TaskType != "report" || string(en.Payload) != `{"team":"ops"}` {
		t.Fatalf("typed schedule stored as %+v", en)
	}
	d := e.runWorker(w)
	e.clk.Set(epoch.Add(time.Minute))
	d.until("the first occurrence", func() bool { return e.nextAt("report").Equal(epoch.Add(2 * time.Minute)) })
	var got []byte
	if err := e.q.DB().ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		got, err = tr.Get(effect).Get()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := "ops " + epoch.Add(time.Minute).UTC().Format(time.RFC3339); string(got) != want {
		t.Fatalf("the handler's write: %q, want %q (committed with the completion)", got, want)
	}

	// The schedule's payload replaced by bytes T does not decode.
	e.register(Schedule{Name: "report", Spec: "* * * * *", TaskType: "report", Payload: []byte("not json")})
	before := runs.Load()
	e.clk.Set(epoch.Add(2 * time.Minute))
	d.until("the undecodable occurrence to be dead-lettered", func() bool {
		n, err := e.q.DeadCount(e.ctx, "report")
		return err == nil && n == 1
	})
	d.until("its successor", func() bool { return e.nextAt("report").Equal(epoch.Add(3 * time.Minute)) })
	if n := runs.Load(); n != before {
		t.Fatalf("the handler ran on an undecodable payload (%d runs, want %d)", n, before)
	}
	if s := w.Stats(); s.Cancelled != 0 || s.Failed != 0 {
		t.Fatalf("stats %+v: an undecodable occurrence is dead-lettered at once, not cancelled nor failed", s)
	}

	// The handler's error for a payload that does not decode names
	// worker.ErrDecode.
	if _, err := j.HandlerTx(e.ctx, Occurrence{Name: "report", Payload: []byte("not json")}); !errors.Is(err, worker.ErrDecode) {
		t.Fatalf("an occurrence that does not decode: %v, want an error wrapping %v", err, worker.ErrDecode)
	}
	if err := Periodic(e.ctx, e.newWorker("w2"), NewPeriodicJobTx[reportArgs](Schedule{Spec: "@hourly"}, reportArgs{}, nil, worker.HandlerOptions{})); !errors.Is(err, ErrInvalidSchedule) {
		t.Fatalf("a nil Tx handler: %v, want ErrInvalidSchedule", err)
	}
}
