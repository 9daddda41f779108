package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// BenchmarkDrain drains b.N no-op jobs, enqueued beforehand in batches of
// 100 (not timed), with one worker of 100 handler slots on the real clock,
// with per-job leases and in short-job mode (one tenant or 100; one lane a
// zone, the default, or 16), on memkv with and without FDB's latencies
// (memkv.FDBLatency). It reports jobs/s and the kv operations per job of
// the drain (claims, acks, hand-backs; enqueues excluded). Run it with
//
//	go test -run '^$' -bench Drain -benchtime 20000x ./worker/
func BenchmarkDrain(b *testing.B) {
	type layout struct {
		name      string
		short     bool
		tenants   int
		zoneLanes int
	}
	layouts := []layout{
		{name: "zones", tenants: 1},
		{name: "zones-16-lanes", tenants: 1, zoneLanes: 16},
		{name: "zones-100-tenants", tenants: 100},
		{name: "zones-short", short: true, tenants: 1},
		{name: "zones-short-16-lanes", short: true, tenants: 1, zoneLanes: 16},
	}
	for _, lat := range []bool{false, true} {
		for _, l := range layouts {
			name := l.name + "/no-latency"
			if lat {
				name = l.name + "/fdb-latency"
			}
			b.Run(name, func(b *testing.B) {
				mo := memkv.Options{Seed: 1}
				if lat {
					mo.Latency = memkv.FDBLatency()
				}
				raw, space := fdbtest.OpenMem(b, mo)
				db := kv.WithCounters(raw)
				opts := quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
				opts.ZoneLanes = l.zoneLanes
				if l.short {
					opts.TaskTypes = map[string]quick.TaskTypeOptions{"bench": {ShortJobs: true}}
				}
				ctx := context.Background()
				q, err := quick.Open(ctx, db, space, opts)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < b.N; i += 100 {
					jobs := make([]quick.NewJob, min(100, b.N-i))
					for j := range jobs {
						jobs[j] = quick.NewJob{TaskType: "bench", Payload: make([]byte, 100)}
						if l.tenants > 1 {
							jobs[j].ItemSpace = fmt.Sprintf("tenant-%d", (i+j)%l.tenants)
						}
					}
					if _, err := q.Enqueue(ctx, jobs...); err != nil {
						b.Fatal(err)
					}
				}
				var done atomic.Int64
				all := make(chan struct{})
				n := int64(b.N)
				h := func(ctx context.Context, j *RawJob) error {
					if done.Add(1) == n {
						close(all)
					}
					return nil
				}
				before := db.Stats()
				b.ResetTimer()
				t0 := time.Now()
				w, err := New(Config{Queue: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				if err := RegisterRaw(w, "bench", h, HandlerOptions{Concurrency: 100}); err != nil {
					b.Fatal(err)
				}
				go func() { _ = w.Run(ctx) }()
				select {
				case <-all:
				case <-time.After(5 * time.Minute):
					b.Fatalf("drained %d of %d jobs in 5 minutes", done.Load(), n)
				}
				// The last acks are in once the acker is idle.
				fctx, cancel := context.WithTimeout(ctx, time.Minute)
				_ = w.acker.flush(fctx)
				cancel()
				el := time.Since(t0)
				b.StopTimer()
				d := db.Stats().Sub(before)
				s := w.Stats()
				stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_ = w.Stop(stopCtx)
				cancel()
				per := func(v int64) float64 { return float64(v) / float64(b.N) }
				b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
				b.ReportMetric(per(d.Mutations), "mutations/job")
				b.ReportMetric(per(d.Commits), "commits/job")
				b.ReportMetric(per(d.KeysRead), "keys-read/job")
				b.ReportMetric(per(d.BytesWritten), "bytes-written/job")
				b.ReportMetric(per(s.ClaimBatches+s.EmptyClaims), "claims/job")
				b.ReportMetric(per(s.AckBatches), "acks/job")
				b.ReportMetric(per(d.Conflicts), "kv-conflicts/job")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkZonesEnqueueToStartIdle measures enqueue-to-start latency,
// one job at a time into an idle worker, after a random pause
// of 0.2-1 s, memkv with FDB's latencies (or, with -tags fdb, the
// FoundationDB that fdbtest finds), real clock. Run it with
//
//	go test -run '^$' -bench ZonesEnqueueToStart -benchtime 50x ./worker/
func BenchmarkZonesEnqueueToStartIdle(b *testing.B) {
	for _, short := range []bool{false, true} {
		name := "per-job"
		if short {
			name = "short"
		}
		b.Run(name, func(b *testing.B) {
			raw, space := benchDB(b)
			opts := quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if short {
				opts.TaskTypes = map[string]quick.TaskTypeOptions{"bench": {ShortJobs: true}}
			}
			ctx := context.Background()
			q, err := quick.Open(ctx, raw, space, opts)
			if err != nil {
				b.Fatal(err)
			}
			started := startIdleZonesWorker(b, ctx, q)
			var lat latencies
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				time.Sleep(200*time.Millisecond + rand.N(800*time.Millisecond))
				b.StartTimer()
				t0 := time.Now()
				if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "bench", ItemSpace: fmt.Sprintf("t%d", i%10)}); err != nil {
					b.Fatal(err)
				}
				lat.add((<-started).Sub(t0))
			}
			lat.report(b)
		})
	}
}

// startIdleZonesWorker runs a zones worker of task type "bench" on q whose
// handler reports when each job starts, and waits until it claims.
func startIdleZonesWorker(b *testing.B, ctx context.Context, q *quick.Queue) <-chan time.Time {
	b.Helper()
	started := make(chan time.Time, 1)
	w, err := New(Config{Queue: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := RegisterRaw(w, "bench", func(ctx context.Context, j *RawJob) error {
		started <- time.Now()
		return nil
	}, HandlerOptions{}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = w.Run(ctx) }()
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = w.Stop(sctx)
		cancel()
	})
	deadline := time.Now().Add(30 * time.Second)
	for w.byType["bench"].refuse() != "" {
		if time.Now().After(deadline) {
			b.Fatal("the worker did not start claiming")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return started
}
