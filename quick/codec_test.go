package quick

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func sampleRecord() record {
	return record{TaskType: "email", Priority: 2, ItemSpace: "tenant-42", Payload: bytes.Repeat([]byte("x"), 100),
		MaxAttempts: 25, CreatedAtMs: 1_900_000_000_000, PlacedAtMs: 1_900_000_000_000, PlacedLane: 7}
}

func TestCodecRoundTrip(t *testing.T) {
	sv := schedValue{Attempt: 3, Token: 0xdeadbeefcafe, Holder: "worker-1", LeasedAtMs: 1_900_000_000_000, MaxAttempts: 25, Flags: flagCheckpoint, UniqueKey: "u"}
	var sv2 schedValue
	if err := sv2.unmarshal(sv.marshal()); err != nil || sv2 != sv {
		t.Fatalf("schedValue round trip: %+v, %v", sv2, err)
	}
	r := sampleRecord()
	r.LastError, r.State, r.DeadAtMs, r.Attempts = "boom", stateDead, 5, 25
	var r2 record
	if err := r2.unmarshal(r.marshal()); err != nil || !bytes.Equal(r2.Payload, r.Payload) {
		t.Fatalf("record round trip: %v", err)
	}
	r2.Payload, r.Payload = nil, nil
	if !reflect.DeepEqual(r2, r) {
		t.Fatalf("record round trip: %+v != %+v", r2, r)
	}
}

func TestCodecRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{{0xff}, {0x0a, 0x05, 'a'}, {0x11, 1, 2}, {0x08}} {
		var sv schedValue
		if err := sv.unmarshal(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("schedValue %x: %v, want ErrCorrupt", b, err)
		}
	}
}

func FuzzDecodeValues(f *testing.F) {
	r := sampleRecord()
	f.Add(r.marshal())
	sv := schedValue{Attempt: 1, Token: 9, Holder: "w"}
	f.Add(sv.marshal())
	f.Add([]byte{})
	f.Add(encodeQuarantine([]byte("key"), []byte{0xff, 1}, "boom", time.UnixMilli(1_900_000_000_000)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var sv schedValue
		if sv.unmarshal(b) == nil {
			var again schedValue
			if err := again.unmarshal(sv.marshal()); err != nil || again != sv {
				t.Fatalf("schedValue re-encode: %+v != %+v (%v)", again, sv, err)
			}
		}
		var r record
		if r.unmarshal(b) == nil {
			var again record
			if err := again.unmarshal(r.marshal()); err != nil || !reflect.DeepEqual(normal(again), normal(r)) {
				t.Fatalf("record re-encode: %+v != %+v (%v)", again, r, err)
			}
		}
		if q, err := decodeQuarantine(b); err == nil {
			again, err := decodeQuarantine(encodeQuarantine(q.Key, q.Value, q.Error, q.At))
			if err != nil || !bytes.Equal(again.Key, q.Key) || again.Error != truncate(q.Error, maxErrorLen) {
				t.Fatalf("quarantine re-encode: %+v != %+v (%v)", again, q, err)
			}
		}
	})
}

// normal makes empty and nil payloads equal for comparison.
func normal(r record) record {
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r
}

// BenchmarkCodec compares the record encoding with JSON for a record with a
// 100-byte payload: the figures in docs/design.md.
func BenchmarkCodec(b *testing.B) {
	r := sampleRecord()
	b.Run("protowire", func(b *testing.B) {
		var n int
		for b.Loop() {
			buf := r.marshal()
			var out record
			if err := out.unmarshal(buf); err != nil {
				b.Fatal(err)
			}
			n = len(buf)
		}
		b.ReportMetric(float64(n), "bytes/record")
	})
	b.Run("json", func(b *testing.B) {
		var n int
		for b.Loop() {
			buf, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			var out record
			if err := json.Unmarshal(buf, &out); err != nil {
				b.Fatal(err)
			}
			n = len(buf)
		}
		b.ReportMetric(float64(n), "bytes/record")
	})
}
