package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// tracedRun enqueues one job under an "insert" span, runs it with a worker
// whose spans go to a recorder, and returns the insert's span context, the
// run's span and the span context the handler saw in its context.
func tracedRun(t *testing.T, asChild bool, payload string) (trace.SpanContext, sdktrace.ReadOnlySpan, trace.SpanContext) {
	t.Helper()
	e := newEnv(t, quick.Options{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	seen := make(chan trace.SpanContext, 1)
	w := e.newWorker(Config{TracerProvider: tp, TraceAsChild: asChild}, func(w *Worker) {
		if err := RegisterRaw(w, "ev", func(ctx context.Context, j *RawJob) error {
			seen <- trace.SpanContextFromContext(ctx)
			if string(j.Args) == "fail" {
				return errors.New("boom")
			}
			return nil
		}, HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	ctx, insert := tp.Tracer("test").Start(context.Background(), "insert")
	if _, err := e.q.Enqueue(ctx, quick.NewJob{TaskType: "ev", Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	insert.End()
	e.start(w)
	handlerSaw := recv(e, "the handler", seen)
	var run sdktrace.ReadOnlySpan
	e.waitFor("the run's span to end", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "process ev" {
				run = s
				return true
			}
		}
		return false
	})
	return insert.SpanContext(), run, handlerSaw
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, ev := range s.Events() {
		out = append(out, ev.Name)
	}
	return out
}

// By default a run's span starts a trace of its own, linked to the span
// the job was enqueued under; it holds the claim and the ack as events,
// and the handler's context carries it.
func TestTracingRunSpanLinksToTheInsert(t *testing.T) {
	insert, run, handlerSaw := tracedRun(t, false, "ok")
	if run.Parent().IsValid() || run.SpanContext().TraceID() == insert.TraceID() {
		t.Fatalf("run span in trace %s with parent %v; want a new root (insert trace %s)", run.SpanContext().TraceID(), run.Parent(), insert.TraceID())
	}
	links := run.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID() != insert.TraceID() || links[0].SpanContext.SpanID() != insert.SpanID() {
		t.Fatalf("run span links %+v, want one to the insert %v", links, insert)
	}
	if run.SpanKind() != trace.SpanKindConsumer || run.Status().Code == codes.Error {
		t.Fatalf("run span kind %v, status %+v", run.SpanKind(), run.Status())
	}
	if got := eventNames(run); len(got) != 3 || got[0] != "claim" || got[1] != "start" || got[2] != "ack" {
		t.Fatalf("run span events %v, want claim, start, ack", got)
	}
	if handlerSaw.SpanID() != run.SpanContext().SpanID() {
		t.Fatalf("the handler's context holds span %v, want the run's %v", handlerSaw, run.SpanContext())
	}
}

// TraceAsChild puts the run's span in the insert's trace, as its child; a
// failed run's span says so.
func TestTracingRunSpanAsChild(t *testing.T) {
	insert, run, _ := tracedRun(t, true, "fail")
	if run.Parent().SpanID() != insert.SpanID() || run.SpanContext().TraceID() != insert.TraceID() || len(run.Links()) != 0 {
		t.Fatalf("run span parent %v trace %s links %v; want a child of the insert %v", run.Parent(), run.SpanContext().TraceID(), run.Links(), insert)
	}
	if st := run.Status(); st.Code != codes.Error || st.Description != "boom" {
		t.Fatalf("failed run's span status %+v, want error boom", st)
	}
}

// Without a TracerProvider a run builds no span and its handler's context
// holds none.
func TestTracingOffBuildsNoSpan(t *testing.T) {
	e := newEnv(t, quick.Options{})
	seen := make(chan trace.SpanContext, 1)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "ev", func(ctx context.Context, j *RawJob) error {
			seen <- trace.SpanContextFromContext(ctx)
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e.enqueue(quick.NewJob{TaskType: "ev"})
	e.start(w)
	if sc := recv(e, "the handler", seen); sc.IsValid() {
		t.Fatalf("the handler's context holds span %v without a TracerProvider", sc)
	}
}

// BenchmarkJobFeatures is the cost per job of events and tracing, on and
// off: b.N no-op jobs (a 100-byte payload, enqueued beforehand, not
// timed) drained by one worker of 100 handler slots on memkv without
// latency, real clock. Modes: "off" (neither), "events" (one subscriber
// reading every event), "tracing" (an SDK TracerProvider whose spans go
// to a no-op exporter; jobs enqueued without a span), "tracing-linked"
// (the same, each job enqueued under a span: its run's span links to it),
// "all" (events and tracing-linked). It reports ns and heap allocations
// per job of the drain (wall time, and process CPU time, which a loaded
// machine disturbs less), and its kv writes per job (these vary with how
// the claims and acks happen to batch; quick's BenchmarkZoneJobCost
// counts a job's own). Run it with
//
//	go test -run '^$' -bench JobFeatures -benchtime 20000x ./worker/
func BenchmarkJobFeatures(b *testing.B) {
	for _, mode := range []string{"off", "events", "tracing", "tracing-linked", "all"} {
		b.Run("mode="+mode, func(b *testing.B) {
			raw, space := fdbtest.OpenMem(b, memkv.Options{Seed: 1})
			db := kv.WithCounters(raw)
			ctx := context.Background()
			q, err := quick.Open(ctx, db, space, quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			cfg := Config{Queue: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			linked := mode == "tracing-linked" || mode == "all"
			if mode != "off" && mode != "events" {
				cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
			}
			ectx := ctx
			if linked {
				var span trace.Span
				ectx, span = sdktrace.NewTracerProvider().Tracer("bench").Start(ctx, "insert")
				defer span.End()
			}
			for i := 0; i < b.N; i += 100 {
				jobs := make([]quick.NewJob, min(100, b.N-i))
				for j := range jobs {
					jobs[j] = quick.NewJob{TaskType: "bench", Payload: make([]byte, 100)}
				}
				if _, err := q.Enqueue(ectx, jobs...); err != nil {
					b.Fatal(err)
				}
			}
			w, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var done atomic.Int64
			all := make(chan struct{})
			n := int64(b.N)
			if err := RegisterRaw(w, "bench", func(ctx context.Context, j *RawJob) error {
				if done.Add(1) == n {
					close(all)
				}
				return nil
			}, HandlerOptions{Concurrency: 100}); err != nil {
				b.Fatal(err)
			}
			var got atomic.Int64
			if mode == "events" || mode == "all" {
				evs, _ := w.Subscribe()
				go func() {
					for range evs {
						got.Add(1)
					}
				}()
			}
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			m0 := ms.Mallocs
			c0 := cpuTime(b)
			before := db.Stats()
			b.ResetTimer()
			t0 := time.Now()
			go func() { _ = w.Run(ctx) }()
			select {
			case <-all:
			case <-time.After(5 * time.Minute):
				b.Fatalf("drained %d of %d jobs in 5 minutes", done.Load(), n)
			}
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			_ = w.acker.flush(fctx)
			cancel()
			el := time.Since(t0)
			b.StopTimer()
			cpu := cpuTime(b) - c0
			runtime.ReadMemStats(&ms)
			d := db.Stats().Sub(before)
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_ = w.Stop(stopCtx)
			cancel()
			if (mode == "events" || mode == "all") && got.Load()+w.Stats().EventsDropped != n {
				b.Fatalf("%d events received and %d dropped for %d jobs", got.Load(), w.Stats().EventsDropped, n)
			}
			per := func(v float64) float64 { return v / float64(b.N) }
			b.ReportMetric(per(float64(el.Nanoseconds())), "ns/job")
			b.ReportMetric(per(float64(cpu.Nanoseconds())), "cpu-ns/job")
			b.ReportMetric(per(float64(ms.Mallocs-m0)), "allocs/job")
			b.ReportMetric(per(float64(d.Mutations)), "mutations/job")
			b.ReportMetric(per(float64(d.BytesWritten)), "bytes-written/job")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime is this process's user + system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
