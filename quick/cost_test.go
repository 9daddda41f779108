package quick_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// The cost benchmarks of the one layout (issue 12). Run them with
//
//	go test -run '^$' -bench 'ZoneJobCost|JobLifeAllocs' -benchtime 2000x ./quick/
//	go test -run '^$' -bench 'EnqueueDrainCPU' -benchtime 3x ./quick/
//
// Nothing is asserted about speed; the kv figures are per job.

// mallocs is the process's heap allocation count: allocations per job come
// from it (memkv's own included, since the engine runs in process).
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// reportSplit reports the claim + ack part of a job's life apart from the
// enqueue: short-job mode's target is stated for claim + ack.
func reportSplit(b *testing.B, claimAck kv.Stats, jobs int) {
	p := claimAck.Per(int64(jobs))
	b.ReportMetric(p.Mutations, "claimack-mutations/job")
	b.ReportMetric(p.BytesWritten, "claimack-bytes/job")
	b.ReportMetric(p.Commits, "claimack-commits/job")
}

// BenchmarkZoneJobCost measures a job's life: enqueue,
// claim, complete (BenchmarkZoneJobLife counts enqueue and claim only), alone and in batches of 100, a 100-byte payload; with
// per-job leases ("lease") and in short-job mode ("short", the lane lease
// is the jobs' lease and acks clear them). In short-job mode the worker
// keeps the lane it holds (Keep) from one batch to the next, as a worker
// at steady state does, and hands it back at the end.
func BenchmarkZoneJobCost(b *testing.B) {
	// lease-untracked and short-untracked: the same for an Untracked task
	// type (no lookup index entry), the cheaper mode beside the default.
	// lease-retain and short-retain: the same for a task type that keeps a
	// finished record of each job (TaskTypeOptions.Retain).
	// lease-traced: each job enqueued with a span context (NewJob.Trace),
	// what tracing costs a job that uses it.
	for _, mode := range []string{"lease", "short", "lease-untracked", "short-untracked", "lease-retain", "short-retain", "lease-traced"} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("mode=%s/batch=%d", mode, batch), func(b *testing.B) {
				opts := quick.Options{}
				switch mode {
				case "short":
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"email": {ShortJobs: true}}
				case "lease-untracked":
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"email": {Untracked: true}}
				case "short-untracked":
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"email": {ShortJobs: true, Untracked: true}}
				case "lease-retain":
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"email": {Retain: 24 * time.Hour}}
				case "short-retain":
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"email": {ShortJobs: true, Retain: 24 * time.Hour}}
				}
				e := newEnv(b, opts)
				payload := make([]byte, 100)
				jobs := make([]quick.NewJob, batch)
				var enq, rest kv.Stats
				var held *quick.LaneLease
				allocs0 := mallocs()
				start := time.Now()
				done := 0
				for b.Loop() {
					// Time moves on (a millisecond a batch), so each
					// batch's keys sort after the short-job cursor of the
					// one before, as they do on a real clock.
					e.clk.Advance(time.Millisecond)
					for i := range jobs {
						jobs[i] = quick.NewJob{TaskType: "email", Payload: payload}
						if mode == "lease-traced" {
							jobs[i].Trace = benchSpan
						}
					}
					s0 := e.db.Stats()
					e.enqueue(b, jobs...)
					s1 := e.db.Stats()
					// A held lane is renewed when a third of its lease is
					// left, as package worker does (counted with the claims).
					if held != nil && held.Deadline.Sub(e.clk.Now()) < e.q.Options().LaneLeaseTime/3 {
						p, err := e.q.Consumer().ExtendLane(e.ctx, *held, e.q.Options().LaneLeaseTime)
						if err != nil {
							b.Fatal(err)
						}
						held = &p
					}
					res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{
						TaskType: "email", Holder: "w", Max: batch,
						Lane: held, Keep: strings.HasPrefix(mode, "short"),
					})
					if err != nil {
						b.Fatal(err)
					}
					held = res.Lane
					acks := make([]quick.Ack, len(res.Jobs))
					for i, l := range res.Jobs {
						acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
					}
					if _, err := e.q.Ack(e.ctx, acks...); err != nil {
						b.Fatal(err)
					}
					enq, rest = enq.Add(s1.Sub(s0)), rest.Add(e.db.Stats().Sub(s1))
					done += len(res.Jobs)
				}
				if held != nil {
					if err := e.q.Consumer().ReleaseLane(e.ctx, *held); err != nil {
						b.Fatal(err)
					}
				}
				if done != b.N*batch {
					b.Fatalf("ran %d jobs, want %d", done, b.N*batch)
				}
				b.ReportMetric(float64(done)/time.Since(start).Seconds(), "jobs/s")
				b.ReportMetric(float64(mallocs()-allocs0)/float64(done), "allocs/job")
				reportPerJob(b, enq.Add(rest), done)
				reportSplit(b, rest, done)
			})
		}
	}
}

// benchSpan is the span context of BenchmarkZoneJobCost's traced mode.
var benchSpan = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
	TraceFlags: trace.FlagsSampled,
})

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cpuSeconds is this process's user + system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// BenchmarkEnqueueDrainCPU is issue 12's CPU per 1,000 jobs without the
// worker runtime: 20,000 jobs enqueued in batches of 100, then drained by
// 8 claimers (Max 100, acks at once) on memkv without latency; process
// CPU time (getrusage) around the run, memkv included.
// One op is the whole 20,000-job run: use -benchtime 3x.
func BenchmarkEnqueueDrainCPU(b *testing.B) {
	// zones-untracked: the same for an Untracked task type (no lookup
	// index entry per job), the cheaper mode beside the default.
	for _, layout := range []string{"zones", "zones-untracked"} {
		b.Run("layout="+layout, func(b *testing.B) {
			const jobs, batch, claimers = 20_000, 100, 8
			var cpu float64
			runs := 0
			for b.Loop() {
				db := memkv.Open(memkv.Options{})
				opts := quick.Options{Logger: quietLogger()}
				if layout == "zones-untracked" {
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"bench": {Untracked: true}}
				}
				ctx := context.Background()
				q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"cpu"}), opts)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				c0 := cpuSeconds(b)
				payload := make([]byte, 100)
				for n := 0; n < jobs; n += batch {
					js := make([]quick.NewJob, batch)
					for i := range js {
						js[i] = quick.NewJob{TaskType: "bench", Payload: payload}
					}
					if _, err := q.Enqueue(ctx, js...); err != nil {
						b.Fatal(err)
					}
				}
				var done atomic.Int64
				var wg sync.WaitGroup
				names := make([]string, claimers)
				for c := range names {
					names[c] = fmt.Sprintf("w%d", c)
				}
				for _, holder := range names {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for done.Load() < jobs {
							res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "bench", Holder: holder, Max: batch})
							if err != nil {
								b.Error(err)
								return
							}
							ls := res.Jobs
							if len(ls) == 0 {
								runtime.Gosched()
								continue
							}
							acks := make([]quick.Ack, len(ls))
							for i, l := range ls {
								acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
							}
							if _, err := q.Ack(ctx, acks...); err != nil {
								b.Error(err)
								return
							}
							done.Add(int64(len(ls)))
						}
					}()
				}
				wg.Wait()
				cpu += cpuSeconds(b) - c0
				runs++
				_ = db.Close()
			}
			b.ReportMetric(cpu/float64(runs)/jobs*1000, "cpu-s/1000jobs")
		})
	}
}
