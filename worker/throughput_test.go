package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// sumThroughput reads the fleet's counters and sums them per task type.
func sumThroughput(t *testing.T, e *env) map[string][2]int64 {
	t.Helper()
	tp, err := ReadThroughput(e.ctx, e.q, ThroughputOptions{Since: e.clk.Now().Add(-3 * time.Hour)})
	if err != nil || !tp.Exact {
		t.Fatalf("ReadThroughput: %+v %v", tp, err)
	}
	out := map[string][2]int64{}
	for _, m := range tp.Minutes {
		s := out[m.TaskType]
		s[0] += m.Completed
		s[1] += m.Failed
		out[m.TaskType] = s
	}
	return out
}

// TestFleetThroughput: two workers' completions and failures reach the
// database's minute counters with their clock rounds (a graceful stop
// flushes the rest), summed over the fleet; the purge-presence duty clears
// old minutes.
func TestFleetThroughput(t *testing.T) {
	e := newEnv(t, quick.Options{MaxAttempts: 1})
	failing := func(context.Context, *RawJob) error { return errors.New("no") }
	var ws []*Worker
	var hs []*runHandle
	for _, id := range []string{"a", "b"} {
		w := e.newWorker(Config{ID: id}, func(w *Worker) {
			if err := RegisterRaw(w, "email", noopRaw, HandlerOptions{Concurrency: 4}); err != nil {
				t.Fatal(err)
			}
			if err := RegisterRaw(w, "flaky", failing, HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		ws, hs = append(ws, w), append(hs, e.start(w))
	}
	e.settle(ws...)
	run := func(emails, flaky int) {
		t.Helper()
		var jobs []quick.NewJob
		for range emails {
			jobs = append(jobs, quick.NewJob{TaskType: "email"})
		}
		for range flaky {
			jobs = append(jobs, quick.NewJob{TaskType: "flaky"})
		}
		before := ws[0].Stats().Completed + ws[1].Stats().Completed + ws[0].Stats().Failed + ws[1].Stats().Failed
		e.enqueue(jobs...)
		done := func() bool {
			return ws[0].Stats().Completed+ws[1].Stats().Completed+ws[0].Stats().Failed+ws[1].Stats().Failed == before+int64(emails+flaky)
		}
		// This test counts throughput, not wake-ups: when the workers have
		// settled with jobs left (a wake-up not seen), the clock moves to
		// their next poll. Bounded: 30 s of fake time.
		for i := 0; !done(); i++ {
			if i == 30 {
				t.Fatalf("the jobs did not run in 30 s of fake time")
			}
			e.settle(ws...)
			if !done() {
				e.step(time.Second, time.Second, ws...)
			}
		}
	}
	e.step(5*time.Second, time.Second, ws...) // the start-up rounds
	run(6, 2)
	e.step(5*time.Second, time.Second, ws...)
	if got := sumThroughput(t, e); got["email"] != [2]int64{6, 0} || got["flaky"] != [2]int64{0, 2} {
		t.Fatalf("after 6 emails and 2 failures: %v", got)
	}
	run(60, 20)
	e.step(5*time.Second, time.Second, ws...)
	if got := sumThroughput(t, e); got["email"] != [2]int64{66, 0} || got["flaky"] != [2]int64{0, 22} {
		t.Fatalf("after 66 emails and 22 failures: %v", got)
	}
	// A graceful stop flushes what the last round did not carry.
	run(3, 0)
	for i := range ws {
		if err := e.stop(ws[i], hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := sumThroughput(t, e); got["email"] != [2]int64{69, 0} {
		t.Fatalf("after the stops: %v, want 69 emails", got)
	}

	// Old minutes go with the purge-presence duty: one range clear.
	e.clk.Advance(throughputKeep + 2*time.Minute)
	if _, err := purgePresence(e.ctx, e.q); err != nil {
		t.Fatal(err)
	}
	if got := sumThroughput(t, e); len(got) != 0 {
		t.Fatalf("after the purge: %v, want none", got)
	}
}

// TestThroughputPendingSurvivesFailedRound: counts drained into a round
// whose transaction did not commit go with the next round.
func TestThroughputPendingSurvivesFailedRound(t *testing.T) {
	e := newEnv(t, quick.Options{})
	var tp throughput
	space := throughputSpace(e.q)
	tp.count("email", false, 3)
	tp.count("email", true, 1)
	// A round that fails: its adds are dropped with its transaction.
	err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tp.add(tr, space, e.clk.Now())
		return errors.New("commit failed")
	})
	if err == nil {
		t.Fatal("the failing round committed")
	}
	tp.count("email", false, 2)
	if err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tp.add(tr, space, e.clk.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tp.committed()
	if got := sumThroughput(t, e); got["email"] != [2]int64{5, 1} {
		t.Fatalf("after a failed round and a good one: %v, want 5 completed, 1 failed", got)
	}
	// Committed counts are not added again.
	if err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tp.add(tr, space, e.clk.Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := sumThroughput(t, e); got["email"] != [2]int64{5, 1} {
		t.Fatalf("a committed count was added twice: %v", got)
	}
	// A counter this build does not write is skipped, not an error.
	if err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Set(space.Pack(tuple.Tuple{unixMinute(e.clk.Now()), "email"}), []byte{1})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := sumThroughput(t, e); got["email"] != [2]int64{5, 1} {
		t.Fatalf("with a foreign key: %v", got)
	}
}

// TestThroughputAddsPerRound: a round adds one counter per task type and
// kind that ran, whatever the number of jobs: 10 jobs or 10,000 cost the
// same two mutations.
func TestThroughputAddsPerRound(t *testing.T) {
	e := newEnv(t, quick.Options{})
	space := throughputSpace(e.q)
	for _, jobs := range []int{10, 10_000} {
		var tp throughput
		for i := range jobs {
			tp.count("email", false, 1)
			if i%4 == 0 {
				tp.count("flaky", true, 1)
			}
		}
		before := e.db.Stats()
		if err := e.db.Transact(e.ctx, func(tr kv.Transaction) error {
			tp.add(tr, space, e.clk.Now())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		tp.committed()
		d := e.db.Stats().Sub(before)
		t.Logf("%d jobs: %d mutations, %d bytes written", jobs, d.Mutations, d.BytesWritten)
		if d.Mutations != 2 {
			t.Errorf("%d jobs: %d mutations in the round, want 2 (email completed, flaky failed)", jobs, d.Mutations)
		}
	}
}

// FuzzReadThroughput: whatever bytes sit under the counters' prefix,
// ReadThroughput skips what it cannot read and never panics.
func FuzzReadThroughput(f *testing.F) {
	f.Add([]byte{0x15, 0x01, 0x02, 'e', 0x00, 0x14}, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff}, []byte{})
	f.Add([]byte{0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	e := newEnv(f, quick.Options{})
	space := throughputSpace(e.q)
	f.Fuzz(func(t *testing.T, tail, value []byte) {
		key := append(append([]byte(nil), space.Bytes()...), tail...)
		if err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
			b, en := space.Range()
			tr.ClearRange(kv.KeyRange{Begin: b, End: en})
			tr.Set(key, value)
			return nil
		}); err != nil {
			t.Skip(err) // a key the engine refuses
		}
		if _, err := ReadThroughput(e.ctx, e.q, ThroughputOptions{Since: time.Unix(0, 0)}); err != nil {
			t.Fatalf("ReadThroughput: %v", err)
		}
	})
}
