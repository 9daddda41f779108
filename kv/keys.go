package kv

import "bytes"

// Strinc returns the first key after every key that starts with prefix: the
// prefix with trailing 0xff bytes dropped and its last byte incremented, as
// FDB's Strinc. It returns nil for a prefix of only 0xff bytes.
func Strinc(prefix []byte) []byte {
	p := bytes.TrimRight(prefix, "\xff")
	if len(p) == 0 {
		return nil
	}
	out := bytes.Clone(p)
	out[len(out)-1]++
	return out
}

// PrefixRange returns the range of keys that start with prefix.
func PrefixRange(prefix []byte) KeyRange {
	end := Strinc(prefix)
	if end == nil {
		end = []byte{0xff}
	}
	return KeyRange{Begin: bytes.Clone(prefix), End: end}
}

// KeyAfter returns the first key after key: key followed by a zero byte.
func KeyAfter(key []byte) []byte {
	out := make([]byte, len(key)+1)
	copy(out, key)
	return out
}

// SingleKeyRange returns the range holding key alone.
func SingleKeyRange(key []byte) KeyRange {
	return KeyRange{Begin: bytes.Clone(key), End: KeyAfter(key)}
}

// Contains reports whether key lies in r.
func (r KeyRange) Contains(key []byte) bool {
	return bytes.Compare(key, r.Begin) >= 0 && bytes.Compare(key, r.End) < 0
}

// Limits FDB enforces, in bytes.
const (
	MaxKeySize         = 10_000
	MaxValueSize       = 100_000
	MaxTransactionSize = 10_000_000
)
