package cron

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// TestSuccessorInTheCompletingTransaction runs a per-minute schedule for a
// while: after every completion exactly one occurrence is pending, at the
// next minute, with the deterministic ID.
func TestSuccessorInTheCompletingTransaction(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"})
	for m := 1; m <= 20; m++ {
		e.clk.Set(epoch.Add(time.Duration(m) * time.Minute))
		ran := e.runDue("tick", "w1", ok)
		if len(ran) != 1 || !ran[0].ScheduledAt.Equal(e.clk.Now()) {
			t.Fatalf("minute %d ran %+v", m, ran)
		}
		info, env := e.pending("tick")
		want := epoch.Add(time.Duration(m+1) * time.Minute)
		if !env.ScheduledAt.Equal(want) || info.ID != occurrenceID("tick", env.Gen, want, e.clk.Now(), time.Hour) {
			t.Fatalf("minute %d: pending %s at %v, want the deterministic ID at %v", m, info.ID, env.ScheduledAt, want)
		}
	}
}

// TestCompletionAndSuccessorCommitTogether: a completion transaction that
// fails after scheduling the successor leaves neither.
func TestCompletionAndSuccessorCommitTogether(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"})
	e.clk.Advance(time.Minute)
	ls := e.claim("tick", "w1")
	failure := errors.New("the handler's own write failed")
	if err := e.finish(ls[0], quick.AckComplete, "", func(kv.Transaction) error { return failure }); !errors.Is(err, failure) {
		t.Fatalf("finish = %v", err)
	}
	if info, _ := e.pending("tick"); info.ID != ls[0].ID || info.State != quick.StateLeased {
		t.Fatalf("after the failed transaction: %+v, want the occurrence still leased", info)
	}
	if err := e.finish(ls[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, env := e.pending("tick"); !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("successor at %v", env.ScheduledAt)
	}
}

// TestSuccessorNeedsTheCompletionFirst: enqueued before the completion in
// the transaction, the successor would find the unique key still held by
// the occurrence itself; completeTx reports it instead of losing the chain.
func TestSuccessorNeedsTheCompletionFirst(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"})
	e.clk.Advance(time.Minute)
	l := e.claim("tick", "w1")[0]
	err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		if _, err := completeTx(tr, e.q, l.Payload, l.ID); err != nil {
			return err
		}
		_, err := e.q.AckTx(tr, quick.Ack{Lease: l, Kind: quick.AckComplete})
		return err
	})
	if !errors.Is(err, ErrCompletionOrder) {
		t.Fatalf("successor before completion: %v, want ErrCompletionOrder", err)
	}
}

func TestFailedOccurrenceRetriesThenDeadLettersAndTheChainGoesOn(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 3})
	e.clk.Set(epoch.Add(time.Minute))
	fail := func(Occurrence) error { return errBoom }
	for attempt := 1; attempt <= 3; attempt++ {
		ran := e.runDue("tick", "w1", fail)
		if len(ran) != 1 || ran[0].Attempt != attempt || !ran[0].ScheduledAt.Equal(epoch.Add(time.Minute)) {
			t.Fatalf("attempt %d ran %+v", attempt, ran)
		}
		if attempt < 3 {
			// The chain waits for the retry: still one occurrence, the same.
			if _, env := e.pending("tick"); !env.ScheduledAt.Equal(epoch.Add(time.Minute)) {
				t.Fatalf("while retrying, pending %v", env.ScheduledAt)
			}
			e.clk.Advance(10 * time.Second)
		}
	}
	if n, _ := e.q.DeadCount(e.ctx, "tick"); n != 1 {
		t.Fatalf("dead letters %d, want 1", n)
	}
	if _, env := e.pending("tick"); !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("after the dead letter, pending %v", env.ScheduledAt)
	}
}

func TestMissedRuns(t *testing.T) {
	cases := []struct {
		name   string
		spec   string
		policy MissedRuns
		late   time.Duration   // how long after its time the first occurrence runs
		want   []time.Duration // the next occurrences, after the first one's time
	}{
		// Scheduled at 00:01, run at 00:05:30: 00:02 to 00:05 were missed.
		{"run once", "* * * * *", RunOnce, 4*time.Minute + 30*time.Second, []time.Duration{4 * time.Minute, 5 * time.Minute}},
		{"skip all", "* * * * *", SkipAll, 4*time.Minute + 30*time.Second, []time.Duration{5 * time.Minute, 6 * time.Minute}},
		{"late within the period", "* * * * *", RunOnce, 30 * time.Second, []time.Duration{time.Minute, 2 * time.Minute}},
		{"every, run once", "@every 1m", RunOnce, 4*time.Minute + 30*time.Second, []time.Duration{4 * time.Minute, 5 * time.Minute}},
		// Daily, workers down three days: one run, dated the last missed
		// midnight (older than quick's ID window: the ID takes now's time).
		{"daily, run once", "@daily", RunOnce, 3*24*time.Hour + time.Hour, []time.Duration{3 * 24 * time.Hour, 4 * 24 * time.Hour}},
		{"daily, skip all", "@daily", SkipAll, 3*24*time.Hour + time.Hour, []time.Duration{4 * 24 * time.Hour, 5 * 24 * time.Hour}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.register(Schedule{Name: "tick", Spec: c.spec, TaskType: "tick", MissedRuns: c.policy})
			_, first := e.pending("tick")
			e.clk.Set(first.ScheduledAt.Add(c.late))
			if ran := e.runDue("tick", "w1", ok); len(ran) != 1 {
				t.Fatalf("ran %+v", ran)
			}
			for _, w := range c.want {
				_, env := e.pending("tick")
				if want := first.ScheduledAt.Add(w); !env.ScheduledAt.Equal(want) {
					t.Fatalf("next occurrence at %v, want %v", env.ScheduledAt, want)
				}
				e.clk.Set(env.ScheduledAt)
				if ran := e.runDue("tick", "w1", ok); len(ran) != 1 {
					t.Fatalf("ran %+v at %v", ran, e.clk.Now())
				}
			}
		})
	}
}

func TestRepairRestoresBrokenChains(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "a", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 1})
	e.register(Schedule{Name: "b", Spec: "*/5 * * * *", TaskType: "tick"})
	if n, err := Repair(e.ctx, e.q); n != 0 || err != nil {
		t.Fatalf("Repair of intact chains = %d, %v", n, err)
	}

	// Break a: its occurrence is claimed by a worker that vanishes; its
	// only attempt spent, the next claim dead-letters it, and no handler
	// is left to schedule the next.
	e.clk.Set(epoch.Add(time.Minute))
	if ls := e.claim("tick", "doomed"); len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	e.clk.Advance(11 * time.Second)
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "tick", Holder: "w2", Lease: 10 * time.Second})
	if err != nil || res.DeadLettered != 1 {
		t.Fatalf("claim: %+v, %v; want the occurrence dead-lettered", res, err)
	}
	// Break b by hand.
	if err := e.q.Cancel(e.ctx, e.entry("b").NextID); err != nil {
		t.Fatal(err)
	}
	if e.entry("a").Alive || e.entry("b").Alive {
		t.Fatal("broken chains listed alive")
	}

	before := e.db.Stats()
	n, err := Repair(e.ctx, e.q)
	if n != 2 || err != nil {
		t.Fatalf("Repair = %d, %v; want 2 restored", n, err)
	}
	t.Logf("repairing 2 chains cost %s", e.db.Stats().Sub(before))
	for name, want := range map[string]time.Duration{"a": 2 * time.Minute, "b": 5 * time.Minute} {
		if en := e.entry(name); !en.Alive || !en.Next.Equal(epoch.Add(want)) {
			t.Fatalf("%s after Repair: %+v, want alive at %v", name, en, epoch.Add(want))
		}
	}
	before = e.db.Stats()
	if n, err := Repair(e.ctx, e.q); n != 0 || err != nil {
		t.Fatalf("second Repair = %d, %v", n, err)
	}
	t.Logf("checking 2 intact chains cost %s", e.db.Stats().Sub(before))
	if d := e.db.Stats().Sub(before); d.Mutations != 0 {
		t.Fatalf("Repair of intact chains wrote %+v", d)
	}
}

// TestConcurrentRepairsRestoreOnce: any number of processes may repair at
// once; the chain gets one occurrence.
func TestConcurrentRepairsRestoreOnce(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick"})
	if err := e.q.Cancel(e.ctx, e.entry("tick").NextID); err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := Repair(e.ctx, e.q)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1 {
		t.Fatalf("restored %d times, want 1", total)
	}
	e.pending("tick")
}

func TestRunRepairer(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "tick", Spec: "*/5 * * * *", TaskType: "tick"})
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- RunRepairer(ctx, e.q, time.Minute, nil) }()
	if err := e.q.Cancel(e.ctx, e.entry("tick").NextID); err != nil {
		t.Fatal(err)
	}
	d := &clockDriver{t: t, e: e}
	d.until("the repairer to restore the chain", func() bool { return e.entry("tick").Alive })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("RunRepairer returned %v", err)
	}
}
