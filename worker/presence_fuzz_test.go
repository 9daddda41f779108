package worker

import (
	"slices"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// FuzzDecodePresence: a presence value of any bytes decodes or fails with
// an error, never a panic; a record this build writes (with its cluster,
// field 7) reads back as written.
func FuzzDecodePresence(f *testing.F) {
	space := tuple.FromTuple(tuple.Tuple{"q", "wp"})
	rec := presenceRecord{Presence: Presence{ID: "w1", Process: "host-1", TaskTypes: []string{"email"},
		Started: time.UnixMilli(1000), Beat: time.UnixMilli(2000), Cluster: "east"}, period: 5 * time.Second}
	f.Add(rec.marshal(), "east")
	f.Add([]byte{0x3a, 0x04, 'w', 'e', 's', 't'}, "")
	f.Add([]byte{0xff, 0xff}, "")
	f.Fuzz(func(t *testing.T, v []byte, cluster string) {
		_, _ = decodePresence(space, kv.KeyValue{Key: space.Pack(tuple.Tuple{"w1"}), Value: v})
		r := rec
		r.Cluster = cluster
		got, err := decodePresence(space, kv.KeyValue{Key: space.Pack(tuple.Tuple{"w1"}), Value: r.marshal()})
		if err != nil || got.Cluster != cluster || got.Process != r.Process || !slices.Equal(got.TaskTypes, r.TaskTypes) || got.period != r.period {
			t.Fatalf("round trip of %+v: %+v %v", r, got, err)
		}
	})
}
