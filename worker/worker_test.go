package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// runs counts the runs of each job and the completions a handler reports.
type runs struct {
	mu   sync.Mutex
	runs map[quick.ID]int
	done map[quick.ID]int
}

func newRuns() *runs { return &runs{runs: map[quick.ID]int{}, done: map[quick.ID]int{}} }

func (c *runs) start(id quick.ID) {
	c.mu.Lock()
	c.runs[id]++
	c.mu.Unlock()
}

func (c *runs) finish(id quick.ID) {
	c.mu.Lock()
	c.done[id]++
	c.mu.Unlock()
}

func (c *runs) finished() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.done)
}

// check fails the test unless every id finished exactly once and, with
// once set, ran exactly once.
func (c *runs) check(t *testing.T, ids []quick.ID, once bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.done[id] != 1 {
			t.Fatalf("job %s finished %d times, want 1", id, c.done[id])
		}
		if once && c.runs[id] != 1 {
			t.Fatalf("job %s ran %d times, want 1", id, c.runs[id])
		}
	}
	if len(c.done) != len(ids) {
		t.Fatalf("%d jobs finished, want %d", len(c.done), len(ids))
	}
}

func zonesOptions(short ...string) quick.Options {
	o := quick.Options{}
	if len(short) > 0 {
		o.TaskTypes = map[string]quick.TaskTypeOptions{}
		for _, t := range short {
			o.TaskTypes[t] = quick.TaskTypeOptions{ShortJobs: true}
		}
	}
	return o
}

// enqueueTenants enqueues perTenant jobs for each of tenants tenants.
func (e *env) enqueueTenants(taskType string, tenants, perTenant int) []quick.ID {
	e.t.Helper()
	var ids []quick.ID
	for i := range tenants {
		jobs := make([]quick.NewJob, perTenant)
		for j := range jobs {
			jobs[j] = quick.NewJob{TaskType: taskType, ItemSpace: fmt.Sprintf("tenant-%03d", i)}
		}
		for _, r := range e.enqueue(jobs...) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// countingHandler records runs and completions in c.
func countingHandler(c *runs) Handler[[]byte] {
	return func(ctx context.Context, j *RawJob) error {
		c.start(j.Lease.ID)
		c.finish(j.Lease.ID)
		return nil
	}
}

func (e *env) zonesWorkers(n int, taskType string, h Handler[[]byte], opts HandlerOptions) []*Worker {
	e.t.Helper()
	var ws []*Worker
	for i := range n {
		w := e.newWorker(Config{ID: fmt.Sprintf("w%d", i)}, func(w *Worker) {
			if err := RegisterRaw(w, taskType, h, opts); err != nil {
				e.t.Fatal(err)
			}
		})
		ws = append(ws, w)
	}
	return ws
}

// drain steps the clock until cond holds, then lets the workers settle
// (a clock advance while a loop is between reading the clock and arming its
// timer would delay that timer past the time its park announces).
func (e *env) drain(what string, cond func() bool, ws ...*Worker) {
	e.t.Helper()
	defer e.settle(ws...)
	for i := 0; !cond(); i++ {
		if i > 600 {
			e.t.Fatalf("%s: not done after %d simulated seconds", what, i)
		}
		e.waitFor("workers to settle", func() bool {
			if cond() {
				return true
			}
			for _, w := range ws {
				if !w.quiet() {
					return false
				}
			}
			return true
		})
		if !cond() {
			e.clk.Advance(time.Second)
		}
	}
}

// Many tenants drain completely with several workers: nothing lost,
// nothing run twice.
func TestZonesManyTenantsDrain(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("tenanted")
			}
			e := newClockedEnv(t, opts)
			ids := e.enqueueTenants("tenanted", 40, 12)
			c := newRuns()
			ws := e.zonesWorkers(3, "tenanted", countingHandler(c), HandlerOptions{Concurrency: 16})
			for _, w := range ws {
				e.start(w)
			}
			e.drain("drain", func() bool {
				var n int64
				for _, w := range ws {
					n += w.Stats().Completed
				}
				return n == int64(len(ids))
			}, ws...)
			e.settle(ws...)
			c.check(t, ids, true)
			var s Stats
			for _, w := range ws {
				ws := w.Stats()
				s.Completed += ws.Completed
				s.ClaimBatches += ws.ClaimBatches
				s.LeaseLost += ws.LeaseLost
			}
			if s.Completed != int64(len(ids)) || s.LeaseLost != 0 {
				t.Fatalf("stats %+v, want %d completed and no lease lost", s, len(ids))
			}
			t.Logf("%d jobs of 40 tenants, 3 workers: %d claim batches", len(ids), s.ClaimBatches)
			for _, w := range ws {
				if err := w.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			assertNoZonesWork(t, e, "tenanted")
		})
	}
}

// assertNoZonesWork checks that a drained task type has nothing left to
// claim, even after every lease could have lapsed.
func assertNoZonesWork(t *testing.T, e *env, taskType string) {
	t.Helper()
	e.clk.Advance(10 * time.Minute)
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: taskType, Holder: "checker", Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 0 {
		t.Fatalf("%d jobs left after the drain", len(res.Jobs))
	}
}

// A worker killed while running jobs loses none: their leases lapse on the
// fake clock and another worker runs them.
func TestZonesKilledWorkerLosesNothing(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("crashy")
			}
			e := newClockedEnv(t, opts)
			ids := e.enqueueTenants("crashy", 5, 4)
			c := newRuns()
			g := newGate()
			victim := e.newWorker(Config{ID: "victim"}, func(w *Worker) {
				if err := RegisterRaw(w, "crashy", func(ctx context.Context, j *RawJob) error {
					c.start(j.Lease.ID)
					g.enter()
					<-ctx.Done()
					return ctx.Err()
				}, HandlerOptions{Concurrency: 8, Lease: 10 * time.Second}); err != nil {
					t.Fatal(err)
				}
			})
			e.start(victim)
			e.waitFor("the victim to take jobs", func() bool { return g.count() == 8 })
			victim.kill()
			if victim.Stats().Completed != 0 {
				t.Fatal("the victim completed jobs")
			}
			ws := e.zonesWorkers(2, "crashy", countingHandler(c), HandlerOptions{Concurrency: 4})
			for _, w := range ws {
				e.start(w)
			}
			e.drain("drain after the kill", func() bool { return c.finished() == len(ids) }, ws...)
			c.check(t, ids, false)
		})
	}
}

// Short-job mode end to end: jobs complete in batched acks under lane
// leases, and a job that runs longer than the lane lease moves to a lease
// of its own without a gap: a second worker never runs it meanwhile.
func TestZonesShortJobs(t *testing.T) {
	e := newClockedEnv(t, zonesOptions("short"))
	ids := e.enqueueTenants("short", 4, 25)
	long := e.enqueue(quick.NewJob{TaskType: "short", ItemSpace: "tenant-000"})[0].ID
	c := newRuns()
	g := newGate()
	h := func(ctx context.Context, j *RawJob) error {
		c.start(j.Lease.ID)
		if j.Lease.ID == long {
			g.enter()
			select {
			case <-g.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.finish(j.Lease.ID)
		return nil
	}
	ws := e.zonesWorkers(2, "short", h, HandlerOptions{Concurrency: 8, Lease: 20 * time.Second})
	for _, w := range ws {
		e.start(w)
	}
	e.drain("short drain", func() bool { return c.finished() == len(ids) && g.count() == 1 }, ws...)
	// The long job runs on: several pointer leases pass.
	pl := e.q.Options().LaneLeaseTime
	e.step(4*pl, 500*time.Millisecond, ws...)
	c.mu.Lock()
	n := c.runs[long]
	c.mu.Unlock()
	if n != 1 {
		t.Fatalf("the long job ran %d times while the first run went on", n)
	}
	var held int
	for _, w := range ws {
		held += w.byType["short"].shorts.held()
	}
	if held != 0 {
		t.Fatalf("%d short lanes still held with only a promoted job running", held)
	}
	g.release()
	completed := func() int64 {
		var n int64
		for _, w := range ws {
			n += w.Stats().Completed
		}
		return n
	}
	e.drain("the long job", func() bool { return completed() == int64(len(ids)+1) }, ws...)
	c.check(t, append(ids, long), true)
	var s Stats
	for _, w := range ws {
		ws := w.Stats()
		s.Completed += ws.Completed
		s.AckBatches += ws.AckBatches
		s.LeaseLost += ws.LeaseLost
	}
	if s.LeaseLost != 0 || s.Completed != int64(len(ids)+1) {
		t.Fatalf("stats %+v", s)
	}
	var short int64
	for _, w := range ws {
		short += w.byType["short"].shortStarts.Load()
	}
	if short != int64(len(ids)+1) {
		t.Fatalf("%d of %d jobs handed out under a lane lease, want all", short, len(ids)+1)
	}
	t.Logf("short mode: %d jobs, %d ack batches", s.Completed, s.AckBatches)
}

// An idle zones worker's reads are bounded: over simulated minutes it polls
// the pointer index about once per MaxIdleSleep and looks for schema-1 jobs
// once per legacyCheck, and joins no registry.
func TestZonesIdleReadsBounded(t *testing.T) {
	e := newEnv(t, zonesOptions())
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "idle", noopRaw, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.settle(w)
	e.step(time.Minute, time.Second, w)
	before, sBefore := e.db.Stats(), w.Stats()
	const secs = 300
	e.step(secs*time.Second, time.Second, w)
	d, s := e.db.Stats().Sub(before), w.Stats()
	claims := s.EmptyClaims - sBefore.EmptyClaims
	per := func(v int64) float64 { return float64(v) / secs }
	t.Logf("idle zones worker over %d simulated s: per second grv=%.2f reads=%.2f range_reads=%.2f keys_read=%.2f mutations=%.2f commits=%.2f; claims=%d",
		secs, per(d.ReadVersions), per(d.Reads), per(d.RangeReads), per(d.KeysRead), per(d.Mutations), per(d.Commits), claims)
	if claims > secs/4+2 {
		t.Fatalf("%d claims in %d s, want at most one every 4 s", claims, secs)
	}
	// One claim per 4-5 s, one schema-1 look and one clock round per 5 s,
	// and a sleep registration per sleep: under 1 GRV and 0.5 commits a
	// second, where the registry heartbeat alone is 1 of each.
	if g := per(d.ReadVersions); g > 0.9 {
		t.Fatalf("%.2f read versions a second", g)
	}
	if m := per(d.Commits); m > 0.5 {
		t.Fatalf("%.2f commits a second while idle", m)
	}
}

// A graceful stop hands back at once the claimed jobs still waiting for a
// handler slot (prefetch), and releases the running ones after the
// shutdown timeout: another worker then runs every job exactly once to
// completion.
func TestZonesStopReleasesPrefetched(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			opts := zonesOptions()
			if short {
				opts = zonesOptions("stopper")
			}
			e := newClockedEnv(t, opts)
			ids := e.enqueueTenants("stopper", 1, 10)
			c := newRuns()
			g := newGate()
			first := e.newWorker(Config{ID: "first", ShutdownTimeout: 5 * time.Second}, func(w *Worker) {
				if err := RegisterRaw(w, "stopper", func(ctx context.Context, j *RawJob) error {
					g.enter()
					<-ctx.Done()
					return ctx.Err()
				}, HandlerOptions{Concurrency: 2}); err != nil {
					t.Fatal(err)
				}
			})
			h := e.start(first)
			r := first.byType["stopper"]
			e.waitFor("two running and two waiting", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return g.count() == 2 && len(r.waiting) == 2
			})
			if err := e.stop(first, h); err != nil {
				t.Fatal(err)
			}
			if s := first.Stats(); s.Released != 4 || s.Completed != 0 {
				t.Fatalf("stats %+v, want 4 released (2 waiting, 2 running)", s)
			}
			ws := e.zonesWorkers(1, "stopper", countingHandler(c), HandlerOptions{Concurrency: 4})
			e.start(ws[0])
			e.drain("the rest", func() bool { return c.finished() == len(ids) }, ws...)
			c.check(t, ids, true)
		})
	}
}
