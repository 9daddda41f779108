package quick

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// A job carries the span context of its insert, so that the span of each
// of its runs can link to it (package worker). It is the W3C traceparent's
// content in binary, traceBytes long: trace ID (16 bytes), span ID (8)
// and trace flags (1), in field 14 of the job key's value (zjobValue.Trace)
// and nowhere else. A job enqueued without a valid span context stores
// nothing: its value is byte for byte what it was before tracing existed,
// and a value written before then decodes with no trace. tracestate is
// not kept (docs/design.md, "Trace context").

// traceBytes is the size of a stored trace context.
const traceBytes = 16 + 8 + 1

// appendTrace encodes sc for the job value (nil when sc is not valid).
func appendTrace(sc trace.SpanContext) []byte {
	if !sc.IsValid() {
		return nil
	}
	b := make([]byte, 0, traceBytes)
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(sc.TraceFlags()))
}

// decodeTrace is the span context stored as b; the zero SpanContext when b
// is empty or malformed: a trace is advisory, and a job is never refused
// for its trace.
func decodeTrace(b []byte) trace.SpanContext {
	if len(b) != traceBytes {
		return trace.SpanContext{}
	}
	var c trace.SpanContextConfig
	copy(c.TraceID[:], b[:16])
	copy(c.SpanID[:], b[16:24])
	c.TraceFlags = trace.TraceFlags(b[24])
	c.Remote = true
	sc := trace.NewSpanContext(c)
	if !sc.IsValid() {
		return trace.SpanContext{}
	}
	return sc
}

// Trace returns the span context the job was enqueued under (NewJob.Trace,
// or the span in Enqueue's or Insert's context), marked remote; the zero
// SpanContext when it has none. Package worker links the span of each run
// to it.
func (l Lease) Trace() trace.SpanContext {
	if l.zl == nil {
		return trace.SpanContext{}
	}
	return decodeTrace(l.zl.v.Trace)
}

// traceOf fills in a job's span context from ctx when it names none.
func traceOf(ctx context.Context, in *NewJob) {
	if !in.NoTrace && !in.Trace.IsValid() {
		in.Trace = trace.SpanContextFromContext(ctx)
	}
}

// storedTrace is what a prepared job stores of its span context: nothing
// when the job or its task type opts out (NewJob.NoTrace,
// TaskTypeOptions.NoTrace) or it has none.
func (q *Queue) storedTrace(in NewJob) []byte {
	if in.NoTrace || !in.Trace.IsValid() || q.opts.TaskTypes[in.TaskType].NoTrace {
		return nil
	}
	return appendTrace(in.Trace)
}
