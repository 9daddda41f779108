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
	ix := indexValue{Zone: []byte("zone"), ItemSpace: "acme", TaskType: "email", Priority: Normal, Lane: 3, VestMs: 1_900_000_000_000, Flags: flagWaitable}
	var ix2 indexValue
	if err := ix2.unmarshal(ix.marshal()); err != nil || !reflect.DeepEqual(ix2, ix) {
		t.Fatalf("indexValue round trip: %+v, %v", ix2, err)
	}
	for _, ls := range []laneState{
		{PtrMs: 1_900_000_000_000, Token: 7, Holder: fenceHolder, HeldMs: 1_900_000_005_000},
		{PtrMs: 5, Short: true, Vested: true, Parked: true},
	} {
		var ls2 laneState
		if err := ls2.unmarshal(ls.marshal()); err != nil || ls2 != ls {
			t.Fatalf("laneState round trip: %+v != %+v, %v", ls2, ls, err)
		}
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
		var r record
		if err := r.unmarshal(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("record %x: %v, want ErrCorrupt", b, err)
		}
	}
}

func FuzzDecodeValues(f *testing.F) {
	r := sampleRecord()
	f.Add(r.marshal())
	f.Add([]byte{})
	f.Add(encodeQuarantine([]byte("key"), []byte{0xff, 1}, "boom", time.UnixMilli(1_900_000_000_000)))
	f.Fuzz(func(t *testing.T, b []byte) {
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
