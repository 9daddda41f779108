package worker

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// BenchmarkSteady enqueues b.N single jobs at a steady 2,000 jobs/s from 32
// producers (as bench/peers' steady run does) into one worker of 100 slots
// with a no-op handler, memkv with FDB's latencies, real clock; per-job
// leases and short-job mode. It reports the start rate reached, the
// enqueue-to-start p50/p99, and per job the worker's kv cost (claims, acks,
// hand-backs, its idle sleeps; the enqueues are counted apart, and their
// conflicts reported),
// the acks that rode in a claim's commit, and the process's CPU (producers
// and memkv included) and allocations. The -16-lanes rows give the zone 16
// lanes from the start (Options.ZoneLanes), spreading the enqueues, which
// otherwise all cover the one lane's pointer and conflict with each other
// and with the claims. Run it with
//
//	go test -run '^$' -bench 'Steady$' -benchtime 6000x ./worker/
//
// BenchmarkSteadyEngine runs the same on fdbtest.Open's engine: a
// FoundationDB server with -tags fdb (QUICKFDB_FDB_BIN or
// QUICKFDB_CLUSTER_FILE, docs/fdb.md), else memkv without latencies.
func BenchmarkSteady(b *testing.B) {
	benchSteadyRows(b, func(b testing.TB) (kv.Database, tuple.Subspace) {
		return fdbtest.OpenMem(b, memkv.Options{Latency: memkv.FDBLatency(), Seed: 1})
	})
}

func BenchmarkSteadyEngine(b *testing.B) {
	benchSteadyRows(b, fdbtest.Open)
}

func benchSteadyRows(b *testing.B, open func(testing.TB) (kv.Database, tuple.Subspace)) {
	for _, c := range []struct {
		name  string
		short bool
		lanes int
	}{{"per-job", false, 0}, {"short", true, 0}, {"per-job-16-lanes", false, 16}, {"short-16-lanes", true, 16}} {
		short := c.short
		b.Run(c.name, func(b *testing.B) {
			raw, space := open(b)
			counted := kv.WithCounters(raw)
			producing := kv.WithCounters(raw)
			opts := quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ZoneLanes: c.lanes}
			if short {
				opts.TaskTypes = map[string]quick.TaskTypeOptions{"bench": {ShortJobs: true}}
			}
			ctx := context.Background()
			qp, err := quick.Open(ctx, producing, space, opts)
			if err != nil {
				b.Fatal(err)
			}
			q, err := quick.Open(ctx, counted, space, opts)
			if err != nil {
				b.Fatal(err)
			}
			var lat latencies
			var started atomic.Int64
			all := make(chan struct{})
			n := int64(b.N)
			w, err := New(Config{Queue: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			if err := RegisterRaw(w, "bench", func(ctx context.Context, j *RawJob) error {
				if len(j.Args) == 8 {
					lat.add(time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(j.Args)))))
				}
				if started.Add(1) == n {
					close(all)
				}
				return nil
			}, HandlerOptions{Concurrency: 100}); err != nil {
				b.Fatal(err)
			}
			go func() { _ = w.Run(ctx) }()
			defer func() {
				sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_ = w.Stop(sctx)
				cancel()
			}()
			for w.Ready() != nil {
				time.Sleep(5 * time.Millisecond)
			}
			const producers, rate = 32, 2000.0
			gap := time.Duration(float64(time.Second) * producers / rate)
			before, pbefore := counted.Stats(), producing.Stats()
			s0 := w.Stats()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m0 := ms.Mallocs
			cpu0 := cpuTime(b)
			b.ResetTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := p; k < b.N; k += producers {
						at := t0.Add(time.Duration(k/producers)*gap + time.Duration(p)*gap/producers)
						time.Sleep(time.Until(at))
						// Stamped before the call: the enqueue's own round trips count.
						payload := binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
						if _, err := qp.Enqueue(ctx, quick.NewJob{TaskType: "bench", Payload: payload}); err != nil {
							panic(err)
						}
					}
				}()
			}
			wg.Wait()
			select {
			case <-all:
			case <-time.After(2 * time.Minute):
				b.Fatalf("started %d of %d jobs", started.Load(), n)
			}
			el := time.Since(t0)
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			_ = w.acker.flush(fctx)
			cancel()
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			runtime.ReadMemStats(&ms)
			d, pd := counted.Stats().Sub(before), producing.Stats().Sub(pbefore)
			s := w.Stats()
			per := func(v int64) float64 { return float64(v) / float64(b.N) }
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			b.ReportMetric(per(d.Commits), "commits/job")
			b.ReportMetric(per(d.ReadVersions), "grv/job")
			b.ReportMetric(per(d.KeysRead), "keys-read/job")
			b.ReportMetric(per(d.Mutations), "mutations/job")
			b.ReportMetric(per(d.Conflicts), "conflicts/job")
			b.ReportMetric(per(s.ClaimBatches+s.EmptyClaims-s0.ClaimBatches-s0.EmptyClaims), "claims/job")
			b.ReportMetric(per(s.AckBatches-s0.AckBatches), "ack-commits/job")
			b.ReportMetric(per(pd.Conflicts), "enqueue-conflicts/job")
			b.ReportMetric(per(int64(cpu.Microseconds())), "cpu-us/job")
			b.ReportMetric(per(int64(ms.Mallocs-m0)), "allocs/job")
			lat.report(b)
		})
	}
}
