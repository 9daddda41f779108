package cron

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// The acceptance scenario: a per-minute schedule run for 1,000 simulated
// minutes on a database that injects commit_unknown_result (applied and
// not) and spurious conflicts, with handler failures, one occurrence that
// fails until it is dead-lettered, and a worker killed mid-run.
const (
	acceptMinutes = 1000
	killMinute    = 300 // its first run's worker is killed mid-run
	deadMinute    = 500 // fails every attempt: dead-lettered
)

// failsOnce picks the minutes whose first attempt fails.
func failsOnce(m int) bool { return m%97 == 13 }

// script is the handlers' behaviour and the record of what they did.
// Completions are counted by the completing transaction itself (an atomic
// add under doneSpace, committed with the completion or not at all), so a
// count of 1 per minute is exactly-once completion. Starts are counted in
// memory: a run may start more than once (at-least-once), as when its
// worker dies.
type script struct {
	start     time.Time
	doneSpace tuple.Subspace
	killed    chan int // receives the index of the worker running killMinute

	mu     sync.Mutex
	starts map[int]int // minute -> handler starts
}

func (s *script) minute(at time.Time) int { return int(at.Sub(s.start) / time.Minute) }

func (s *script) handler(workerIndex int) TxHandler {
	return func(ctx context.Context, occ Occurrence) (func(kv.Transaction) error, error) {
		m := s.minute(occ.ScheduledAt)
		s.mu.Lock()
		s.starts[m]++
		n := s.starts[m]
		s.mu.Unlock()
		switch {
		case m == killMinute && n == 1:
			s.killed <- workerIndex
			<-ctx.Done() // the worker is killed under us
			return nil, context.Cause(ctx)
		case m == deadMinute:
			return nil, fmt.Errorf("minute %d always fails", m)
		case failsOnce(m) && occ.Attempt == 1:
			return nil, fmt.Errorf("minute %d fails its first attempt", m)
		}
		return s.recordCompletion(occ.ScheduledAt), nil
	}
}

// recordCompletion is the write a successful run commits with its
// completion: one more completion of the minute.
func (s *script) recordCompletion(at time.Time) func(kv.Transaction) error {
	key := s.doneSpace.Pack(tuple.Tuple{at.UnixMilli()})
	return func(tr kv.Transaction) error {
		var one [8]byte
		binary.LittleEndian.PutUint64(one[:], 1)
		tr.Add(key, one[:])
		return nil
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestAcceptanceWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 simulated minutes")
	}
	var faulty *kv.FaultyDB
	// Versions follow the fake clock: see newClockedEnv.
	e := newClockedEnv(t, func(db kv.Database) kv.Database {
		faulty = kv.WithFaults(db, kv.Faults{Seed: 7, UnknownCommitted: 0.02, UnknownNotCommitted: 0.02, Conflict: 0.02})
		return faulty
	})
	sc := &script{start: epoch, doneSpace: e.q.Root().Sub("test-done"), killed: make(chan int, 1), starts: map[int]int{}}
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 3})

	// Workers watch every lane (Replicas 4) and beat once a day: the test
	// jumps the fake clock a minute at a time, past any registry timeout of
	// frequent heartbeats, so the workers would refuse to claim on stale
	// heartbeats; the lanes registry is not what this tests. So each judges
	// its clock once, at Join, and keeps that standing all run: versions
	// must follow the fake clock (newClockedEnv), or a worker that joins
	// after a jump stands by for the whole run.
	const nWorkers = 4
	ws := make([]*worker.Worker, nWorkers)
	done := make([]chan error, nWorkers)
	for i := range ws {
		w, err := worker.New(worker.Config{
			Queue: e.q, ID: fmt.Sprintf("w%d", i), Clock: e.clk, Logger: quietLogger(),
			HeartbeatPeriod: 24 * time.Hour, MaxIdleSleep: 5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := HandleTx(w, "tick", sc.handler(i), worker.HandlerOptions{Concurrency: 2, Lease: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		ws[i], done[i] = w, make(chan error, 1)
		go func() { done[i] <- w.Run(context.Background()) }()
	}
	killed := -1
	t.Cleanup(func() {
		for i, w := range ws {
			if i != killed {
				testhooks.KillWorker(w)
			}
		}
		for i := range ws {
			<-done[i]
		}
	})

	stepper := &clockDriver{t: t, e: e, workers: ws}
	for m := 1; m <= acceptMinutes; m++ {
		at := epoch.Add(time.Duration(m) * time.Minute)
		e.clk.Set(at)
		if m == killMinute {
			select {
			case killed = <-sc.killed:
			case <-time.After(waitLimit):
				t.Fatal("the run to kill never started")
			}
			testhooks.KillWorker(ws[killed])
		}
		stepper.until(fmt.Sprintf("the chain to pass minute %d", m), func() bool { return e.nextAt("tick").After(at) })
	}
	faulty.SetEnabled(false)
	verifyAcceptance(t, e, sc)
	assertFaulted(t, faulty.Stats())
}

// assertFaulted fails the test unless every kind of fault was injected: a
// wiring change that switched them off would otherwise pass unnoticed.
func assertFaulted(t *testing.T, st kv.FaultStats) {
	t.Helper()
	t.Logf("faults injected: %+v", st)
	if st.UnknownCommitted == 0 || st.UnknownNotCommitted == 0 || st.Conflicts == 0 {
		t.Errorf("a kind of fault was never injected: %+v", st)
	}
}

// waitLimit bounds every wait on a condition: a failure deadline, never a
// measured duration.
const waitLimit = 20 * time.Second

// clockDriver waits for conditions that need the workers to act, advancing
// the fake clock 5 s at a time when they have nothing left to do at the
// current time (a retry's backoff, a lapsing lease).
type clockDriver struct {
	t       testing.TB
	e       *env
	workers []*worker.Worker // described when a wait times out
}

func (d *clockDriver) until(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		// Let the workers act at this time: check often, then move on.
		acted := false
		for i := 0; i < 50 && !acted; i++ {
			select {
			case <-d.e.clk.Changed():
			case <-time.After(2 * time.Millisecond):
			}
			acted = cond()
		}
		if acted {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s (fake time %v)%s%s", what, d.e.clk.Now(), d.e.diagnose("tick"), d.describeWorkers())
		}
		if diag := d.e.diagnose("tick"); strings.Contains(diag, ErrCompletionOrder.Error()) {
			d.t.Fatalf("waiting for %s: the worker enqueues the successor before completing the occurrence, so quick's unique key still holds it; "+
				"package worker's CompleteWith and DeadLetterWith must apply the ack before running fn in their transaction:%s", what, diag)
		}
		d.e.clk.Advance(5 * time.Second)
	}
}

// describeWorkers says how often each worker refused to claim: a worker on
// standby (clock judged off) or not knowing the paused types refuses every
// round.
func (d *clockDriver) describeWorkers() string {
	out := ""
	for _, w := range d.workers {
		st := w.Stats()
		out += fmt.Sprintf("\nworker %s: claim rounds refused %d, claimed %d, running %d",
			w.ID(), st.Refused, st.Claimed, st.Running)
	}
	return out
}

// diagnose describes why a chain may be stuck: the last errors of its
// pending occurrence and dead letters.
func (e *env) diagnose(taskType string) string {
	out := ""
	for _, j := range e.jobs(taskType) {
		if info, err := e.q.Get(e.ctx, j.ID); err == nil {
			out += fmt.Sprintf("\npending %s: state %v, attempt %d, last error %q", j.ID, info.State, info.Attempt, info.LastError)
		}
	}
	if dead, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: taskType, Limit: 5}); err == nil {
		for _, j := range dead.Jobs {
			out += fmt.Sprintf("\ndead %s: last error %q", j.ID, j.LastError)
		}
	}
	return out
}

// nextAt is the scheduled time of the schedule's pending occurrence.
func (e *env) nextAt(name string) time.Time {
	e.t.Helper()
	es, err := List(e.ctx, e.q)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, x := range es {
		if x.Name == name && x.Alive {
			return x.Next
		}
	}
	return time.Time{}
}

// verifyAcceptance checks the run: every minute completed exactly once but
// the dead one, which was dead-lettered once; one occurrence pending, the
// next minute's; starts as the script makes them.
func verifyAcceptance(t *testing.T, e *env, sc *script) {
	t.Helper()
	completions := map[int]int64{}
	err := e.q.DB().ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		b, end := sc.doneSpace.Range()
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: end}, kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			tu, err := sc.doneSpace.Unpack(p.Key)
			if err != nil {
				return err
			}
			completions[sc.minute(time.UnixMilli(tu[0].(int64)))] += int64(binary.LittleEndian.Uint64(p.Value))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, doubled []int
	for m := 1; m <= acceptMinutes; m++ {
		want := int64(1)
		if m == deadMinute {
			want = 0
		}
		switch got := completions[m]; {
		case got < want:
			missing = append(missing, m)
		case got > want:
			doubled = append(doubled, m)
		}
	}
	if len(completions) != acceptMinutes-1 || len(missing) > 0 || len(doubled) > 0 {
		t.Fatalf("%d minutes completed, want %d; missing %v, completed more than once %v", len(completions), acceptMinutes-1, missing, doubled)
	}
	dead, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "tick", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Jobs) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead.Jobs))
	}
	if env, err := unmarshalEnvelope(dead.Jobs[0].Payload); err != nil || sc.minute(env.ScheduledAt) != deadMinute || dead.Jobs[0].Attempt != 3 {
		t.Fatalf("dead letter %+v (%v), want minute %d after 3 attempts", dead.Jobs[0], err, deadMinute)
	}
	if _, env := e.pending("tick"); sc.minute(env.ScheduledAt) != acceptMinutes+1 {
		t.Fatalf("pending occurrence at minute %d, want %d", sc.minute(env.ScheduledAt), acceptMinutes+1)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	hist := map[int]int{}
	total := 0
	for m := 1; m <= acceptMinutes; m++ {
		n := sc.starts[m]
		hist[n]++
		total += n
		want := 1
		switch {
		case m == killMinute, failsOnce(m):
			want = 2
		case m == deadMinute:
			want = 3
		}
		if n < want {
			t.Errorf("minute %d started %d times, want at least %d", m, n, want)
		}
	}
	t.Logf("%d minutes: %d completed exactly once, 1 dead-lettered (minute %d); %d handler starts, by starts per minute: %v",
		acceptMinutes, len(completions), deadMinute, total, hist)
}

// TestAcceptanceChain is the acceptance scenario with the workers played by
// the test itself through quick's API (claim, AckTx then completeTx in one
// transaction, Fail), four of them in turn; the killed worker is one that
// claims the run and is never heard of again.
func TestAcceptanceChain(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 simulated minutes")
	}
	var faulty *kv.FaultyDB
	e := newEnv(t, func(db kv.Database) kv.Database {
		faulty = kv.WithFaults(db, kv.Faults{Seed: 11, UnknownCommitted: 0.03, UnknownNotCommitted: 0.03, Conflict: 0.03})
		return faulty
	})
	sc := &script{start: epoch, doneSpace: e.q.Root().Sub("test-done"), starts: map[int]int{}}
	e.register(Schedule{Name: "tick", Spec: "* * * * *", TaskType: "tick", MaxAttempts: 3})
	turn := 0
	for m := 1; m <= acceptMinutes; m++ {
		at := epoch.Add(time.Duration(m) * time.Minute)
		e.clk.Set(at)
		for e.nextAt("tick").Equal(at) {
			turn++
			e.runOnce(sc, fmt.Sprintf("w%d", turn%4))
			if e.nextAt("tick").Equal(at) {
				e.clk.Advance(5 * time.Second) // a retry's backoff, a lapsing lease
			}
		}
	}
	faulty.SetEnabled(false)
	verifyAcceptance(t, e, sc)
	assertFaulted(t, faulty.Stats())
}

// runOnce claims the vested occurrences as holder and runs the script on
// each, ending each as Handle does.
func (e *env) runOnce(sc *script, holder string) {
	e.t.Helper()
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "tick", Holder: holder, Max: 10, Lease: 30 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range res.Jobs {
		env, err := unmarshalEnvelope(l.Payload)
		if err != nil {
			e.t.Fatal(err)
		}
		m := sc.minute(env.ScheduledAt)
		sc.mu.Lock()
		sc.starts[m]++
		n := sc.starts[m]
		sc.mu.Unlock()
		var (
			herr   error
			commit func(kv.Transaction) error
		)
		switch {
		case m == killMinute && n == 1:
			continue // its worker dies: the lease lapses
		case m == deadMinute:
			herr = errBoom
		case failsOnce(m) && l.Attempt == 1:
			herr = errBoom
		default:
			commit = sc.recordCompletion(env.ScheduledAt)
		}
		switch {
		case herr == nil:
			err = e.finish(l, quick.AckComplete, "", commit)
		case l.Attempt >= l.MaxAttempts:
			err = e.finish(l, quick.AckDeadLetter, herr.Error(), nil)
		default:
			err = e.q.Fail(e.ctx, l, herr.Error())
		}
		if err != nil && !errors.Is(err, quick.ErrLeaseLost) {
			e.t.Fatalf("ending %s (minute %d): %v", l.ID, m, err)
		}
	}
}
