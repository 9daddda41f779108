package tuple

import "testing"

// queueKey is shaped like quickfdb's job keys: queue name, lane, due time in
// milliseconds, priority, job id.
var queueKey = Tuple{"emails", 3, int64(1_700_000_000_123), 5, testUUID}

func BenchmarkPack(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = queueKey.Pack()
	}
}

func BenchmarkSubspacePack(b *testing.B) {
	s := NewSubspace([]byte("\x15\x01jobs"))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Pack(queueKey)
	}
}

func BenchmarkUnpack(b *testing.B) {
	key := queueKey.Pack()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unpack(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompare(b *testing.B) {
	other := Tuple{"emails", 3, int64(1_700_000_000_123), 5, UUID{0xff}}
	b.ReportAllocs()
	for b.Loop() {
		_ = Compare(queueKey, other)
	}
}
