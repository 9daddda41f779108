package cron

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

func TestDefinitionRoundTrip(t *testing.T) {
	d := definition{Schedule: Schedule{Name: "sweep", Spec: "*/5 * * * *", TimeZone: "Europe/Paris", TaskType: "sweep",
		Payload: []byte("bucket-7"), Priority: quick.Low, MaxAttempts: 3, MissedRuns: SkipAll}, Gen: 0xfeedface12345678}
	for _, prev := range []string{"", "sweep-v1"} {
		d.PrevTaskType = prev
		got, err := unmarshalDefinition("sweep", d.marshal())
		if err != nil {
			t.Fatal(err)
		}
		if !sameConfig(got.Schedule, d.Schedule) || got.Gen != d.Gen || got.PrevTaskType != prev {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, d)
		}
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []envelope{
		{Name: "sweep", ScheduledAt: epoch.Add(90 * time.Second), Gen: 42, Payload: []byte{0, 1, 2}},
		{Name: "sweep", ScheduledAt: epoch.Add(90 * time.Second), Gen: 1<<64 - 1, Payload: []byte{0, 1, 2}, After: epoch.Add(30 * time.Second)},
	} {
		got, err := unmarshalEnvelope(e.marshal())
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != e.Name || !got.ScheduledAt.Equal(e.ScheduledAt) || got.Gen != e.Gen || !bytes.Equal(got.Payload, e.Payload) || !got.After.Equal(e.After) {
			t.Fatalf("round trip: got %+v, want %+v", got, e)
		}
		if len(e.marshal()) > len(e.Name)+len(e.Payload)+envelopeOverhead {
			t.Fatalf("envelope of %d bytes is over its budget", len(e.marshal()))
		}
	}
}

func TestDecodeGarbage(t *testing.T) {
	for _, v := range [][]byte{nil, {}, {9}, {definitionVersion, 0xff}, {definitionVersion, 0x0a, 0x05, 'a'}, {definitionVersion, 0x41}} {
		if _, err := unmarshalDefinition("x", v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("definition %x: err %v, want ErrCorrupt", v, err)
		}
		if _, err := unmarshalEnvelope(v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("envelope %x: err %v, want ErrCorrupt", v, err)
		}
	}
	// Well-formed protobuf with a bad field type for the generation.
	if _, err := unmarshalEnvelope([]byte{envelopeVersion, 0x0a, 1, 'n', 0x10, 1, 0x18, 1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("generation as varint: err %v, want ErrCorrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(definition{Schedule: Schedule{Spec: "* * * * *", TaskType: "t"}, Gen: 1}.marshal())
	f.Add(envelope{Name: "n", ScheduledAt: epoch, Gen: 1, Payload: []byte("p")}.marshal())
	f.Fuzz(func(t *testing.T, v []byte) {
		// Never panics; a stored definition that decodes still goes
		// through validation before use.
		if d, err := unmarshalDefinition("x", v); err == nil {
			_, _, _ = validate(d.Schedule, epoch)
		}
		_, _ = unmarshalEnvelope(v)
		_, _, _ = decodeDefinition("x", v, epoch)
	})
}
