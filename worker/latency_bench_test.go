package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// The enqueue-to-start benchmarks run on the real clock over memkv with
// FDB-like latencies (memkv.FDBLatency). Latency is measured from just
// before Enqueue to the handler's start, so it includes the enqueue's
// commit. Run them with
//
//	go test -run '^$' -bench EnqueueToStart -benchtime 200x ./worker/
//
// They report p50 and p99 in milliseconds; nothing is asserted.

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 {
		return float64(l.d[min(int(p*float64(len(l.d))), len(l.d)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// benchDB is memkv with FDB's published latencies, or, built with -tags
// fdb, the real FoundationDB that fdbtest finds.
func benchDB(b *testing.B) (kv.Database, tuple.Subspace) {
	if fdbkv.Built {
		return fdbtest.Open(b)
	}
	return fdbtest.OpenMem(b, memkv.Options{Latency: memkv.FDBLatency(), Seed: 1})
}

// benchQueue is a queue on benchDB.
func benchQueue(b *testing.B) *quick.Queue {
	db, space := benchDB(b)
	q, err := quick.Open(context.Background(), db, space, quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// startBenchWorkers starts n workers of task type "bench" and waits until
// each has run its clock check (claims wait on it).
func startBenchWorkers(b *testing.B, q *quick.Queue, n int, cfg Config, opts HandlerOptions, h Handler[[]byte]) []*Worker {
	var ws []*Worker
	for range n {
		c := cfg
		c.Queue = q
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		w, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := RegisterRaw(w, "bench", h, opts); err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
		go func() { _ = w.Run(context.Background()) }()
	}
	b.Cleanup(func() {
		for _, w := range ws {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = w.Stop(ctx)
			cancel()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := true
		for _, w := range ws {
			ready = ready && w.byType["bench"].refuse() == ""
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("workers did not pass their clock checks")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ws
}

// BenchmarkEnqueueToStartIdle enqueues one job at a time into an idle
// worker, after a random pause of 0.2-1 s so the worker is asleep.
func BenchmarkEnqueueToStartIdle(b *testing.B) {
	for _, wake := range []bool{true, false} {
		name := "wake"
		if !wake {
			name = "poll-only"
		}
		b.Run(name, func(b *testing.B) {
			q := benchQueue(b)
			started := make(chan time.Time, 1)
			startBenchWorkers(b, q, 1, Config{DisableWake: !wake}, HandlerOptions{}, func(ctx context.Context, j *RawJob) error {
				started <- time.Now()
				return nil
			})
			var lat latencies
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				time.Sleep(200*time.Millisecond + rand.N(800*time.Millisecond))
				b.StartTimer()
				t0 := time.Now()
				if _, err := q.Enqueue(context.Background(), quick.NewJob{TaskType: "bench"}); err != nil {
					b.Fatal(err)
				}
				lat.add((<-started).Sub(t0))
			}
			lat.report(b)
		})
	}
}

// BenchmarkEnqueueToStartLoad keeps 4 workers (concurrency 50 each, 2 ms
// handlers) busy with 8 producers, each enqueueing one job at a time with a
// 4 ms pause (about 900 jobs/s in all, as fast as 8 producers go on this
// latency). The first 1,000 jobs warm up and are not measured, so workers
// asleep from before the load do not count.
func BenchmarkEnqueueToStartLoad(b *testing.B) {
	for _, wake := range []bool{true, false} {
		name := "wake"
		if !wake {
			name = "poll-only"
		}
		b.Run(name, func(b *testing.B) {
			const warmup = 1000
			q := benchQueue(b)
			var lat latencies
			var wg sync.WaitGroup
			total := warmup + b.N
			ws := startBenchWorkers(b, q, 4, Config{DisableWake: !wake}, HandlerOptions{Concurrency: 50}, func(ctx context.Context, j *RawJob) error {
				if binary.LittleEndian.Uint64(j.Args[8:]) >= warmup {
					lat.add(time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(j.Args)))))
				}
				time.Sleep(2 * time.Millisecond)
				wg.Done()
				return nil
			})
			const producers = 8
			wg.Add(total)
			b.ResetTimer()
			var pwg sync.WaitGroup
			for p := range producers {
				pwg.Add(1)
				go func() {
					defer pwg.Done()
					for i := p; i < total; i += producers {
						time.Sleep(4 * time.Millisecond)
						payload := binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
						payload = binary.LittleEndian.AppendUint64(payload, uint64(i))
						if _, err := q.Enqueue(context.Background(), quick.NewJob{TaskType: "bench", Payload: payload}); err != nil {
							panic(fmt.Sprintf("enqueue: %v", err))
						}
					}
				}()
			}
			pwg.Wait()
			wg.Wait()
			b.StopTimer()
			lat.report(b)
			var claims, acks int64
			for _, w := range ws {
				s := w.Stats()
				claims += s.ClaimBatches + s.EmptyClaims
				acks += s.AckBatches
			}
			b.ReportMetric(float64(claims)/float64(total), "claims/job")
			b.ReportMetric(float64(acks)/float64(total), "acks/job")
		})
	}
}
