package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// A duty shared by three workers runs once per period, never twice at once,
// without a leader; its record shows the last pass.
func TestDutyRunsOnceAPeriodAcrossWorkers(t *testing.T) {
	// Several workers compare clocks through read versions, and a duty
	// runs only on a worker the clock check lets claim: the engine's
	// versions must advance with the test's clock, as a cluster's do with
	// real time, or a worker stepped 5 s ahead of a sample looks skewed.
	e := newClockedEnv(t, quick.Options{})
	var (
		active, runs atomic.Int64
		overlap      atomic.Bool
		mu           sync.Mutex
		by           = map[string]int{}
	)
	duty := func(id string) Duty {
		return Duty{Name: "count", Every: time.Minute, Run: func(ctx context.Context) (DutyReport, error) {
			if active.Add(1) > 1 {
				overlap.Store(true)
			}
			defer active.Add(-1)
			runs.Add(1)
			mu.Lock()
			by[id]++
			mu.Unlock()
			return DutyReport{Count: 7, Detail: "things"}, nil
		}}
	}
	var ws []*Worker
	for i := range 3 {
		id := fmt.Sprintf("d%d", i)
		ws = append(ws, e.newWorker(Config{ID: id, Duties: []Duty{duty(id)}, NoBuiltinDuties: true}, func(w *Worker) {
			if err := RegisterRaw(w, "duty", noopRaw, HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
		}))
	}
	for _, w := range ws {
		e.start(w)
	}
	e.settle(ws...)
	e.step(5*time.Minute, 5*time.Second, ws...)
	if overlap.Load() {
		t.Fatal("two workers ran the duty at once")
	}
	// Due at 1, 2, 3, 4 and 5 minutes: once each.
	if n := runs.Load(); n != 5 {
		t.Fatalf("%d passes in 5 periods, want 5 (by worker %v)", n, by)
	}
	sts, err := DutyStates(e.ctx, e.q)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].Name != "count" || sts[0].Runs != 5 || sts[0].Last.Count != 7 ||
		sts[0].LastBy == "" || sts[0].Holder != "" || !sts[0].Next.After(e.clk.Now()) {
		t.Fatalf("duty records %+v", sts)
	}
}

// Running workers purge what the queue's retention drops, with no caller:
// the dead letters beyond DeadRetention and the markers past the
// idempotency window. Before the built-in duties, nothing called PurgeDead
// or PurgeMarkers, and both grew forever.
func TestBuiltinDutiesPurgeDeadLettersAndMarkers(t *testing.T) {
	e := newEnv(t, quick.Options{DeadRetention: quick.Retention{MaxCount: 2}})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "doomed", func(ctx context.Context, j *RawJob) error {
			return j.DeadLetterWith(ctx, "doomed", nil)
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	const n = 5
	jobs := make([]quick.NewJob, n)
	for i := range jobs {
		jobs[i] = quick.NewJob{TaskType: "doomed"}
	}
	e.enqueue(jobs...)
	e.start(w)
	e.waitFor("every job dead-lettered", func() bool { return w.Stats().DeadLettered == n })
	e.settle(w)
	marker := func() bool {
		var found bool
		if err := e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
			b, end := e.q.Subspace().Sub(int64(2), "m").Range() // the enqueue markers, one per call
			kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: end}, kv.RangeOptions{Limit: 1}).GetSliceWithError()
			found = len(kvs) > 0
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return found
	}
	if !marker() {
		t.Fatal("no enqueue marker to purge")
	}
	// Past the idempotency window (1 h) and two duty periods: the first
	// pass past the window may fall at its very edge.
	// Minute by minute (a duty period is longer), summing what each
	// purge-dead pass reports it removed: the 3 beyond the retention's 2.
	purged, seenRuns := int64(0), int64(0)
	for range 81 {
		e.step(time.Minute, time.Minute, w)
		sts, err := DutyStates(e.ctx, e.q)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Name != "purge-dead/doomed" || st.Runs == seenRuns {
				continue
			}
			if st.Runs != seenRuns+1 {
				t.Fatalf("purge-dead ran %d times in one minute; its counts cannot be summed", st.Runs-seenRuns)
			}
			seenRuns = st.Runs
			purged += st.Last.Count
		}
	}
	if purged != n-2 {
		t.Fatalf("the purge-dead passes removed %d dead letters in all, want %d (the retention keeps 2)", purged, n-2)
	}
	if c, err := e.q.DeadCount(e.ctx, "doomed"); err != nil || c != 2 {
		t.Fatalf("dead count %d (%v), want 2 kept by the retention", c, err)
	}
	sts, err := DutyStates(e.ctx, e.q)
	if err != nil {
		t.Fatal(err)
	}
	if marker() {
		t.Fatalf("enqueue markers past the idempotency window are still there; duties %+v", sts)
	}
	got := map[string]DutyState{}
	for _, st := range sts {
		got[st.Name] = st
	}
	if st := got["purge-dead/doomed"]; st.Runs == 0 || st.LastBy != w.ID() {
		t.Fatalf("purge-dead record %+v", st)
	}
	if st := got["purge-markers"]; st.Runs == 0 || st.Last.Count != -1 || st.LastError != "" {
		t.Fatalf("purge-markers record %+v", st)
	}
}

// A corrupt duty record never blocks the duty: it runs and rewrites it.
func TestCorruptDutyRecordIsRewritten(t *testing.T) {
	e := newEnv(t, quick.Options{})
	if err := e.db.Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Set(dutyKey(e.q, "count"), []byte("\xffnot json"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	w := e.newWorker(Config{NoBuiltinDuties: true, Duties: []Duty{{Name: "count", Every: time.Minute,
		Run: func(ctx context.Context) (DutyReport, error) { runs.Add(1); return DutyReport{}, nil }}}}, func(w *Worker) {
		if err := RegisterRaw(w, "duty", noopRaw, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.settle(w)
	e.step(2*time.Minute, 5*time.Second, w)
	if runs.Load() == 0 {
		t.Fatal("the duty never ran over a corrupt record")
	}
	if _, err := decodeDuty("x", []byte("{")); !errors.Is(err, ErrCorruptDuty) {
		t.Fatalf("decode error %v, want ErrCorruptDuty", err)
	}
	if err := w.AddDuty(Duty{Name: "Bad Name", Run: func(context.Context) (DutyReport, error) { return DutyReport{}, nil }}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad name: %v", err)
	}
}

func first[A, B any](a A, _ B) A { return a }

func TestDutyNamesOfTaskTypesAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, tt := range []string{"email", "Email", "EMAIL", "e mail", "e_mail", "a/b", "ü", string(make([]byte, 100))} {
		name := "purge-dead/" + dutyNameOf(tt)
		if !dutyName.MatchString(name) {
			t.Fatalf("%q: duty name %q does not fit", tt, name)
		}
		if o, dup := seen[name]; dup {
			t.Fatalf("%q and %q share duty %q", tt, o, name)
		}
		seen[name] = tt
	}
}
