package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// starts counts handler starts per worker and per job.
type starts struct {
	mu    sync.Mutex
	byW   map[string]int
	byJob map[quick.ID]int
}

func newStarts() *starts { return &starts{byW: map[string]int{}, byJob: map[quick.ID]int{}} }

func (s *starts) add(w string, id quick.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byW[w]++
	s.byJob[id]++
}

func (s *starts) of(w string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byW[w]
}

func (s *starts) job(id quick.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byJob[id]
}

// skewWorkers starts workers on clocks off the fake clock by offs, in that
// order, each joining after the previous one has beaten once.
func skewWorkers(e *env, st *starts, lease time.Duration, block <-chan struct{}, offs ...time.Duration) []*Worker {
	e.t.Helper()
	var ws []*Worker
	for i, off := range offs {
		var clk clock.Clock = e.clk
		if off != 0 {
			clk = skewed{e.clk, off}
		}
		id := fmt.Sprintf("w%d", i)
		w := e.newWorker(Config{ID: id, Clock: clk}, func(w *Worker) {
			if err := RegisterRaw(w, "skew", func(ctx context.Context, j *RawJob) error {
				st.add(id, j.Lease.ID)
				if string(j.Args) == "long" {
					select {
					case <-block:
					case <-ctx.Done():
					}
				}
				return nil
			}, HandlerOptions{Lease: lease, Concurrency: 4}); err != nil {
				e.t.Fatal(err)
			}
		})
		ws = append(ws, w)
		e.start(w)
		e.waitFor(id+" to beat", func() bool { return !w.byType["skew"].tracker.LastBeat().IsZero() })
		e.settle(ws...)
		e.step(time.Second, time.Second, ws...)
	}
	return ws
}

func refusedSkew(w *Worker) bool { return w.byType["skew"].refuse() == refuseSkew }

// Two workers 10 s apart never stop each other. Each used to take the other
// as its median and both refused to claim, forever: a ready job never ran.
// Now the one that joined second stands by, and the first runs every lane.
func TestTwoWorkersTenSecondsApartDoNotStall(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	st := newStarts()
	ws := skewWorkers(e, st, 30*time.Second, nil, 0, 10*time.Second)
	e.step(5*time.Second, time.Second, ws...)
	if refusedSkew(ws[0]) && refusedSkew(ws[1]) {
		t.Fatal("both workers refuse to claim")
	}
	if refusedSkew(ws[0]) || !refusedSkew(ws[1]) {
		t.Fatalf("refusals: w0 %q, w1 %q; want only the junior (w1) to stand by", ws[0].byType["skew"].refuse(), ws[1].byType["skew"].refuse())
	}
	var jobs []quick.NewJob
	for range 20 {
		jobs = append(jobs, quick.NewJob{TaskType: "skew"})
	}
	e.enqueue(jobs...)
	e.step(5*time.Second, time.Second, ws...)
	e.waitFor("every job to run", func() bool { return st.of("w0") == len(jobs) })
	if n := st.of("w1"); n != 0 {
		t.Fatalf("the worker on standby ran %d jobs", n)
	}
	if got := ws[0].Lanes("skew"); len(got) != e.q.Lanes() {
		t.Fatalf("w0 watches %d lanes, want all %d", len(got), e.q.Lanes())
	}
}

// One worker of four, 10 s ahead, is detected even though it started
// first: it stands by, the others run the jobs of every lane, and a job
// under a short (cron-like, 10 s) lease held by another worker is never
// taken over early. Before, the worker ahead claimed until it had two
// bracketed readings of each peer, and then kept heartbeating while it
// refused, so its lanes' jobs never ran.
func TestOneOfFourAheadIsStoodByAndItsLanesRun(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	st := newStarts()
	block := make(chan struct{})
	defer close(block)
	const lease = 10 * time.Second
	ws := skewWorkers(e, st, lease, block, 10*time.Second, 0, 0, 0)
	e.step(5*time.Second, time.Second, ws...)
	if !refusedSkew(ws[0]) {
		t.Fatalf("the worker 10s ahead claims: refusal %q", ws[0].byType["skew"].refuse())
	}
	if got := ws[0].Lanes("skew"); len(got) != 0 {
		t.Fatalf("the worker on standby watches lanes %v", got)
	}
	covered := map[int]bool{}
	for _, w := range ws[1:] {
		if r := w.byType["skew"].refuse(); r != "" {
			t.Fatalf("%s refuses: %q", w.ID(), r)
		}
		for _, l := range w.Lanes("skew") {
			covered[l] = true
		}
	}
	if len(covered) != e.q.Lanes() {
		t.Fatalf("the agreeing workers watch %d of %d lanes", len(covered), e.q.Lanes())
	}

	// A long job under a 10 s lease, renewed by its holder, and short jobs
	// in every lane.
	long := e.enqueue(quick.NewJob{TaskType: "skew", Payload: []byte("long")})[0].ID
	var short []quick.NewJob
	for range 40 {
		short = append(short, quick.NewJob{TaskType: "skew"})
	}
	e.enqueue(short...)
	e.waitFor("the long job to start", func() bool { return st.job(long) == 1 })
	e.step(6*lease, time.Second, ws...)
	done := st.of("w1") + st.of("w2") + st.of("w3")
	if done != len(short)+1 {
		t.Fatalf("the agreeing workers started %d jobs, want %d", done, len(short)+1)
	}
	if n := st.of("w0"); n != 0 {
		t.Fatalf("the worker 10s ahead started %d jobs", n)
	}
	if n := st.job(long); n != 1 {
		t.Fatalf("the long job under a 10s lease started %d times: taken over early", n)
	}
}
