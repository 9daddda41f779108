// Package tuple encodes tuples of simple values into byte strings whose
// lexicographic order matches the order of the tuples, so that they can be
// used as FoundationDB keys, and decodes them back.
//
// The encoding is FoundationDB's tuple layer, byte for byte (see
// design/tuple.md in the FoundationDB repository). Keys written by this
// package can be read by the official bindings and vice versa; unlike the
// official Go package it is pure Go and does not need cgo or libfdb_c.
//
// # Element types
//
// A Tuple may hold nil, []byte, string, Tuple, int, int8, int16, int32,
// int64, uint, uint8, uint16, uint32, uint64, *big.Int, big.Int, float32,
// float64, bool, UUID and Versionstamp. Decoding yields the same types as
// the official Go binding: nil, []byte, string, Tuple, int64 (uint64 for
// positive values above math.MaxInt64, *big.Int beyond 64 bits), float32,
// float64, bool, UUID and Versionstamp.
//
// # Errors
//
// Pack panics on an element it cannot encode, as the official binding does,
// because that is a programming error; PackChecked reports the same problem
// as an *EncodeError instead. Unpack never panics: malformed input yields a
// *DecodeError, which wraps ErrInvalidEncoding.
//
// # Order
//
// Compare orders tuples exactly as bytes.Compare orders their encodings:
// element by element, first by type (nil < []byte < string < Tuple <
// integers < float32 < float64 < false < true < UUID < Versionstamp), then
// by value. Integers of all Go types compare by numeric value; floats use
// the IEEE total order (-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN).
//
// # Differences from the official Go binding
//
// Encodings are identical. Otherwise:
//   - int8, int16, int32, uint8, uint16 and uint32 are accepted (the official
//     Pack panics on them); they decode as int64 like every integer.
//   - There is no fdb.KeyConvertible support, as this package does not import
//     fdb: pass []byte, and convert keys with fdb.Key(t.Pack()).
//   - Empty byte strings and nested tuples decode as non-nil empty slices
//     (the official decoder returns nil ones).
//   - Unpack rejects truncated elements and unterminated nested tuples; the
//     official decoder panics on some and accepts or misreads others.
//   - Non-canonical integer encodings, which no binding writes, decode to the
//     normalized type of their value (the official decoder returns e.g.
//     uint64(0) for 0x15 0x00, or a *big.Int for a short 0x1d form).
//   - PackWithVersionstamp always writes the 4-byte offset of API version
//     520 and later, needs no API version, and returns errors rather than
//     panicking.
//
// # Subspaces
//
// A Subspace is a raw key prefix under which tuples are packed; it plays
// the role of the official subspace package.
package tuple
