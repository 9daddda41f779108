// Package wire holds the few protobuf wire-format helpers (over protowire)
// that quickfdb's hand-written value encodings share: append a field unless
// it is empty, and walk a value's fields without panicking on garbage.
package wire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is wrapped by every Walk error.
var ErrMalformed = errors.New("malformed protobuf value")

// AppendVarint appends field num as a varint, unless x is zero (the
// default, which readers assume for a missing field).
func AppendVarint(b []byte, num protowire.Number, x uint64) []byte {
	if x == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, x)
}

// AppendString appends field num as bytes, unless s is empty.
func AppendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// AppendBytes appends field num as bytes, unless s is empty.
func AppendBytes(b []byte, num protowire.Number, s []byte) []byte {
	if len(s) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, s)
}

// Walk calls field for each field of b: varints and fixed-width numbers as x,
// length-delimited fields as raw (aliasing b). Groups are skipped. A value
// that does not parse returns an error wrapping ErrMalformed; Walk never
// panics.
func Walk(b []byte, field func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: bad tag: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		var (
			raw []byte
			x   uint64
		)
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		if err := field(num, typ, raw, x); err != nil {
			return err
		}
	}
	return nil
}
