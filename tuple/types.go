package tuple

import "encoding/hex"

// TupleElement is any value that may appear in a Tuple; see the package
// documentation for the accepted types. It is an alias so that a Tuple
// literal and a []any convert freely.
type TupleElement = any

// Tuple is an ordered list of elements that packs into an order-preserving
// key. Decoding normalizes element types (see the package documentation), so
// Unpack(t.Pack()) equals t up to that normalization.
type Tuple []any

// UUID is an RFC 4122 UUID in network byte order. It is a plain array so
// that any UUID library's 16 bytes convert to it without a dependency.
type UUID [16]byte

// String returns the canonical 8-4-4-4-12 lowercase hex form.
func (u UUID) String() string {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return string(buf[:])
}
