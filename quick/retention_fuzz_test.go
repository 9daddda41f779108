package quick

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeFinished: any bytes under a finished record's key decode or
// fail with ErrCorrupt, never panic; what decodes keeps the record's
// bounds and re-encodes to bytes that decode to the same record.
func FuzzDecodeFinished(f *testing.F) {
	full := finishedRecord{
		Kind: OutcomeCancelled, TaskType: "email", ItemSpace: "acme", Priority: High, Attempts: 3, MaxAttempts: 25,
		CreatedAtMs: 1000, StartedAtMs: 2000, FinishedAtMs: 3000, ExpireAtMs: 4000,
		Errors:    []AttemptError{{Attempt: 1, At: time.UnixMilli(1500), Error: "boom"}, {Attempt: 2, At: time.UnixMilli(1800), Error: strings.Repeat("e", 2000)}},
		LastError: "unwanted", Payload: []byte("hello"), PayloadSize: 5, UniqueKey: "u", Flags: flagWaitable,
	}
	f.Add(full.marshal())
	f.Add((&finishedRecord{Kind: OutcomeCompleted, TaskType: "t", Priority: Normal, FinishedAtMs: 1, ExpireAtMs: 1}).marshal())
	f.Add([]byte{0x08, 0x09})
	f.Add([]byte{0x5a, 0x02, 0x08})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeFinished(ID{}, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if rec.Kind != OutcomeCompleted && rec.Kind != OutcomeCancelled || len(rec.Errors) > maxRetainedErrors ||
			len(rec.Payload) > maxRetainedPayload || rec.ExpireAtMs < rec.FinishedAtMs {
			t.Fatalf("decoded out of bounds: %+v", rec)
		}
		again, err := decodeFinished(ID{}, rec.marshal())
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(norm(again), norm(rec)) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", rec, again)
		}
	})
}

// norm drops what an encoding cannot tell apart: empty and nil slices,
// and the location of times.
func norm(r finishedRecord) finishedRecord {
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	if len(r.Errors) == 0 {
		r.Errors = nil
	}
	for i := range r.Errors {
		r.Errors[i].At = r.Errors[i].At.UTC()
	}
	return r
}

// The round trip of a full record, and the history in a job value.
func TestFinishedRecordRoundTrip(t *testing.T) {
	r := finishedRecord{
		Kind: OutcomeCompleted, TaskType: "email", Priority: Low, Attempts: 1, MaxAttempts: 2,
		FinishedAtMs: 10, ExpireAtMs: 20, Errors: []AttemptError{{Attempt: 1, At: time.UnixMilli(5), Error: "x"}},
	}
	got, err := decodeFinished(ID{}, r.marshal())
	if err != nil || !reflect.DeepEqual(norm(got), norm(r)) {
		t.Fatalf("got %+v, %v", got, err)
	}
	v := zjobValue{Attempt: 2, RetainMs: -1, History: r.Errors}
	var w zjobValue
	if err := w.unmarshal(v.marshal()); err != nil || w.RetainMs != -1 || len(w.History) != 1 || w.History[0].Error != "x" {
		t.Fatalf("job value %+v, %v", w, err)
	}
}
