package quick

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func sampleSpan() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{0xa, 0xb, 0xc, 0xd, 0xe, 0xf, 1, 2},
		TraceFlags: trace.FlagsSampled,
	})
}

func sampleJobValue() zjobValue {
	return zjobValue{Payload: []byte("payload"), Attempt: 2, Token: 77, Holder: "w1", LeasedAtMs: 1_900_000_000_000,
		MaxAttempts: 25, Flags: flagTrackable, UniqueKey: "u", LastError: "boom", CreatedAtMs: 1_900_000_000_001}
}

// A job value with a trace round-trips; one without stores not a byte
// more than before tracing, and a value written before tracing (no field
// 12) decodes with none.
func TestJobValueTrace(t *testing.T) {
	v := sampleJobValue()
	plain := v.marshal()
	v.Trace = appendTrace(sampleSpan())
	if len(v.Trace) != traceBytes {
		t.Fatalf("stored trace of %d bytes, want %d", len(v.Trace), traceBytes)
	}
	traced := v.marshal()
	if got := len(traced) - len(plain); got != traceBytes+2 {
		t.Fatalf("a trace adds %d bytes to the value, want %d (tag, length, context)", got, traceBytes+2)
	}
	var back zjobValue
	if err := back.unmarshal(traced); err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("round trip %+v, %v; want %+v", back, err, v)
	}
	if sc := decodeTrace(back.Trace); !sc.Equal(sampleSpan().WithRemote(true)) {
		t.Fatalf("decoded span context %v, want %v", sc, sampleSpan())
	}
	var old zjobValue
	if err := old.unmarshal(plain); err != nil || old.Trace != nil {
		t.Fatalf("a value without a trace: %+v, %v", old, err)
	}
	if !bytes.Equal(old.marshal(), plain) {
		t.Fatal("re-encoding a value without a trace changed its bytes")
	}
	// An invalid span context stores nothing; a malformed stored one reads
	// as none.
	if b := appendTrace(trace.SpanContext{}); b != nil {
		t.Fatalf("invalid span context stored as %x", b)
	}
	for _, b := range [][]byte{nil, {1}, make([]byte, traceBytes), make([]byte, traceBytes+1)} {
		if sc := decodeTrace(b); sc.IsValid() {
			t.Fatalf("%x decoded as %v", b, sc)
		}
	}
}

// Enqueue takes the span context from its context unless the job sets its
// own, opts out, or its task type does; the claim's Lease returns it.
func TestEnqueueStoresTheSpanContext(t *testing.T) {
	q := newZCEnv(t, Options{TaskTypes: map[string]TaskTypeOptions{"quiet": {NoTrace: true}, "short": {ShortJobs: true}}}).q
	ctx := trace.ContextWithSpanContext(context.Background(), sampleSpan())
	other := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}})
	_, err := q.Enqueue(ctx,
		NewJob{TaskType: "loud", Payload: []byte("from ctx")},
		NewJob{TaskType: "loud", Payload: []byte("own"), Trace: other},
		NewJob{TaskType: "loud", Payload: []byte("opted out"), NoTrace: true},
		NewJob{TaskType: "quiet", Payload: []byte("type opted out")},
		NewJob{TaskType: "short", Payload: []byte("short-job mode")},
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(context.Background(), NewJob{TaskType: "loud", Payload: []byte("no span")}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Insert(ctx, traceArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]trace.SpanContext{
		"from ctx": sampleSpan().WithRemote(true), "own": other.WithRemote(true),
		"opted out": {}, "type opted out": {}, "no span": {}, `{}`: sampleSpan().WithRemote(true),
		"short-job mode": sampleSpan().WithRemote(true),
	}
	got := map[string]trace.SpanContext{}
	for _, tt := range []string{"loud", "quiet", "traced-args", "short"} {
		c, err := q.Consumer().Claim(context.Background(), ClaimOptions{TaskType: tt, Holder: "w", Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range c.Jobs {
			got[string(l.Payload)] = l.Trace()
		}
	}
	if len(got) != len(want) {
		t.Fatalf("claimed %d jobs, want %d", len(got), len(want))
	}
	for p, sc := range want {
		if !got[p].Equal(sc) {
			t.Errorf("job %q: trace %v, want %v", p, got[p], sc)
		}
	}
}

type traceArgs struct{}

func (traceArgs) Kind() string { return "traced-args" }

func FuzzDecodeJobValue(f *testing.F) {
	v := sampleJobValue()
	f.Add(v.marshal())
	v.Trace = appendTrace(sampleSpan())
	f.Add(v.marshal())
	f.Add([]byte{0x72, 0x02, 1, 2}) // field 14, too short for a trace
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v zjobValue
		if v.unmarshal(b) != nil {
			return
		}
		_ = decodeTrace(v.Trace) // never panics, whatever is stored
		var again zjobValue
		if err := again.unmarshal(v.marshal()); err != nil || !reflect.DeepEqual(normalValue(again), normalValue(v)) {
			t.Fatalf("job value re-encode: %+v != %+v (%v)", again, v, err)
		}
	})
}

// normalValue makes empty and nil byte fields equal for comparison.
func normalValue(v zjobValue) zjobValue {
	for _, b := range []*[]byte{&v.Payload, &v.Checkpoint, &v.Trace} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	return v
}
