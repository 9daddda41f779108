package worker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing (Config.TracerProvider): each run of a handler is one span,
// "process <task type>", of kind consumer. It starts when the job was
// claimed, carries a "claim" event there, a "start" event when the
// handler starts and an "ack" event when the outcome commits, and ends
// then; the handler's context holds it, so the handler's own spans are its
// children. A job carries the span context of its insert
// (quick.Lease.Trace): by default the run's span is the root of a new
// trace with a link to it, since a job may run long after its insert, many
// times, on other machines, and one trace per run keeps the insert's trace
// short (OpenTelemetry's messaging conventions link a consumer's span to
// its producer's). Config.TraceAsChild makes it a child in the insert's
// trace instead. Without a TracerProvider the worker builds no span and a
// run pays one nil check.

// tracerName is the instrumentation scope of the worker's spans.
const tracerName = "github.com/quickfdb/quickfdb/worker"

// startSpan opens the run's span (nil tracer: none) and returns the
// handler's context carrying it.
func (st *jobState) startSpan(ctx context.Context) context.Context {
	r := st.r
	tr := r.w.tracer
	if tr == nil {
		return ctx
	}
	l := st.first
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(st.claimed),
		trace.WithAttributes(
			attribute.String("messaging.system", "quickfdb"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", r.taskType),
			attribute.String("messaging.message.id", l.ID.String()),
			attribute.String("quickfdb.item_space", l.ItemSpace),
			attribute.Int("quickfdb.attempt", l.Attempt),
		),
	}
	parent := ctx
	if sc := l.Trace(); sc.IsValid() {
		if r.w.cfg.TraceAsChild {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		} else {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := tr.Start(parent, "process "+r.taskType, opts...)
	span.AddEvent("claim", trace.WithTimestamp(st.claimed), trace.WithAttributes(
		attribute.Int64("quickfdb.vested_to_claim_ms", st.claimed.Sub(l.VestedAt).Milliseconds())))
	span.AddEvent("start", trace.WithTimestamp(st.started))
	st.mu.Lock()
	st.span = span
	st.mu.Unlock()
	return ctx
}

// endSpanLocked ends the run's span, if any, with its outcome; errText
// marks it failed. The caller holds st.mu.
func (st *jobState) endSpanLocked(outcome, errText string) {
	span := st.span
	if span == nil {
		return
	}
	st.span = nil
	now := st.r.w.clk.Now()
	span.AddEvent("ack", trace.WithTimestamp(now), trace.WithAttributes(attribute.String("quickfdb.outcome", outcome)))
	span.SetAttributes(attribute.String("quickfdb.outcome", outcome))
	if errText != "" {
		span.SetStatus(codes.Error, errText)
	}
	span.End(trace.WithTimestamp(now))
}

// endSpanAfterRunLocked ends a span the run's other ends left open: a
// run killed, or whose lease was lost before its span opened. A span whose
// ack (or release) is queued is the ack's to end. The caller holds st.mu.
func (st *jobState) endSpanAfterRunLocked() {
	switch st.phase {
	case phaseAcking, phaseReleased:
	case phaseLost:
		st.endSpanLocked("lease_lost", "lease lost")
	case phaseRunning:
		st.endSpanLocked("killed", "worker killed")
	default:
		st.endSpanLocked("ended", "")
	}
}
