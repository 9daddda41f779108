package tuple

import (
	"bytes"
	"fmt"
)

// Subspace is a key prefix under which tuples are packed, so that each kind
// of record lives in its own contiguous key range. It is immutable: it owns
// a private copy of its prefix and hands out copies. The zero value is the
// subspace of all keys (an empty prefix).
type Subspace struct {
	prefix []byte
}

// NewSubspace returns the subspace with the given raw prefix, which need not
// be a tuple encoding.
func NewSubspace(prefix []byte) Subspace {
	return Subspace{prefix: bytes.Clone(prefix)}
}

// FromTuple returns the subspace whose prefix is t.Pack(). It panics as
// Pack does.
func FromTuple(t Tuple) Subspace {
	return Subspace{prefix: t.Pack()}
}

// Sub returns the subspace nested under s by the tuple of the given
// elements. It panics as Pack does.
func (s Subspace) Sub(el ...any) Subspace {
	return Subspace{prefix: s.Pack(Tuple(el))}
}

// Bytes returns a copy of the raw prefix.
func (s Subspace) Bytes() []byte {
	return bytes.Clone(s.prefix)
}

// Pack returns the prefix followed by t's encoding. It panics as Tuple.Pack
// does; PackChecked returns the error instead.
func (s Subspace) Pack(t Tuple) []byte {
	k, err := s.PackChecked(t)
	if err != nil {
		panic(err)
	}
	return k
}

// PackChecked is Pack that returns an *EncodeError instead of panicking.
func (s Subspace) PackChecked(t Tuple) ([]byte, error) {
	buf := make([]byte, 0, len(s.prefix)+sizeHint(t))
	return appendTuple(append(buf, s.prefix...), t, false)
}

// PackWithVersionstamp is Tuple.PackWithVersionstamp with s's prefix; the
// trailing offset counts from the start of the prefix.
func (s Subspace) PackWithVersionstamp(t Tuple) ([]byte, error) {
	return t.PackWithVersionstamp(s.prefix)
}

// Unpack decodes the tuple in k after s's prefix. A key outside s yields an
// error wrapping ErrNotInSubspace; a malformed remainder yields a
// *DecodeError whose Offset counts from the start of k.
func (s Subspace) Unpack(k []byte) (Tuple, error) {
	if !s.Contains(k) {
		return nil, fmt.Errorf(`%w: key b"%s" lacks prefix b"%s"`, ErrNotInSubspace, printable(k), printable(s.prefix))
	}
	d := decoder{b: k[len(s.prefix):], base: len(s.prefix)}
	return d.tuple()
}

// Contains reports whether k starts with s's prefix. The prefix itself
// counts, although Range excludes it.
func (s Subspace) Contains(k []byte) bool {
	return bytes.HasPrefix(k, s.prefix)
}

// Range returns the bounds [prefix+0x00, prefix+0xff) of the keys that
// encode a tuple under s, as the official subspace's FDBRangeKeys.
func (s Subspace) Range() (begin, end []byte) {
	begin = make([]byte, len(s.prefix)+1)
	end = make([]byte, len(s.prefix)+1)
	copy(begin, s.prefix)
	copy(end, s.prefix)
	end[len(s.prefix)] = 0xff
	return begin, end
}

// String matches the official subspace, e.g. Subspace(rawPrefix=\x02jobs\x00).
func (s Subspace) String() string {
	return "Subspace(rawPrefix=" + printable(s.prefix) + ")"
}
