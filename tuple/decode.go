package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
)

// Unpack decodes a tuple encoding. It never panics: malformed input yields
// a *DecodeError wrapping ErrInvalidEncoding. Decoded []byte values never
// alias b. Empty byte strings and tuples decode as non-nil empty slices.
//
// Like the official binding, Unpack accepts some non-canonical encodings
// (integers with redundant leading bytes, or in the length-prefixed form
// when they would fit the compact one); packing the result again yields the
// canonical bytes.
func Unpack(b []byte) (Tuple, error) {
	d := decoder{b: b}
	return d.tuple()
}

// decoder walks b once. Nested tuples are handled with an explicit stack
// rather than recursion, so hostile input cannot drive the call depth.
type decoder struct {
	b    []byte
	base int // added to offsets in errors, for Subspace.Unpack

	// nonCanonical records that some element was accepted in a form Pack
	// would never produce; the fuzz tests use it to demand exact round trips
	// for everything else.
	nonCanonical bool
}

func (d *decoder) errorf(off int, format string, args ...any) error {
	return &DecodeError{Offset: d.base + off, Reason: fmt.Sprintf(format, args...)}
}

func (d *decoder) tuple() (Tuple, error) {
	b := d.b
	cur := newTuple(len(b))
	var parents []Tuple // enclosing tuples, innermost last
	var opened []int    // offsets of the matching 0x05 codes
	for i := 0; i < len(b); {
		code := b[i]
		if len(parents) > 0 && code == codeNil {
			// Inside a nested tuple 0x00 0xff is nil and a bare 0x00 ends it.
			if i+1 < len(b) && b[i+1] == escapeByte {
				cur = append(cur, nil)
				i += 2
				continue
			}
			last := len(parents) - 1
			cur = append(parents[last], cur)
			parents, opened = parents[:last], opened[:last]
			i++
			continue
		}
		if code == codeNested {
			parents = append(parents, cur)
			opened = append(opened, i)
			cur = Tuple{} // no guess: hostile input could nest deeply
			i++
			continue
		}
		el, next, err := d.element(i)
		if err != nil {
			return nil, err
		}
		cur = append(cur, el)
		i = next
	}
	if len(parents) > 0 {
		return nil, d.errorf(opened[len(opened)-1], "nested tuple is not terminated")
	}
	return cur, nil
}

// newTuple guesses capacity for the elements in the remaining bytes (each
// takes at least one), to save the first few regrowths of a typical key.
func newTuple(remaining int) Tuple {
	return make(Tuple, 0, min(remaining, 8))
}

// element decodes the non-nested element whose type code is at b[i] and
// returns it with the offset just past it.
func (d *decoder) element(i int) (any, int, error) {
	b := d.b
	code := b[i]
	switch {
	case code == codeNil: // only reached at the top level
		return nil, i + 1, nil
	case code == codeBytes:
		s, aliased, next, err := d.escaped(i)
		if err != nil {
			return nil, 0, err
		}
		if aliased {
			s = append([]byte{}, s...) // non-nil even when empty
		}
		return s, next, nil
	case code == codeString:
		s, _, next, err := d.escaped(i)
		if err != nil {
			return nil, 0, err
		}
		return string(s), next, nil
	case code > codeNegBigInt && code < codePosBigInt:
		return d.compactInt(i)
	case code == codeNegBigInt || code == codePosBigInt:
		return d.bigInt(i)
	case code == codeFloat32:
		body, err := d.fixed(i, 4, "float32")
		if err != nil {
			return nil, 0, err
		}
		return float32FromKey(binary.BigEndian.Uint32(body)), i + 5, nil
	case code == codeFloat64:
		body, err := d.fixed(i, 8, "float64")
		if err != nil {
			return nil, 0, err
		}
		return float64FromKey(binary.BigEndian.Uint64(body)), i + 9, nil
	case code == codeFalse:
		return false, i + 1, nil
	case code == codeTrue:
		return true, i + 1, nil
	case code == codeUUID:
		body, err := d.fixed(i, 16, "UUID")
		if err != nil {
			return nil, 0, err
		}
		return UUID(body), i + 17, nil
	case code == codeVersionstamp:
		body, err := d.fixed(i, versionstampLen, "versionstamp")
		if err != nil {
			return nil, 0, err
		}
		v := Versionstamp{TransactionVersion: [10]byte(body), UserVersion: binary.BigEndian.Uint16(body[10:])}
		return v, i + 1 + versionstampLen, nil
	}
	return nil, 0, d.errorf(i, "unknown type code 0x%02x", code)
}

// fixed returns the n bytes after the type code at b[i].
func (d *decoder) fixed(i, n int, what string) ([]byte, error) {
	if len(d.b)-i-1 < n {
		return nil, d.errorf(i, "truncated %s: need %d bytes, have %d", what, n, len(d.b)-i-1)
	}
	return d.b[i+1 : i+1+n], nil
}

// escaped decodes the 0x00-terminated, 0x00 0xff-escaped body after the
// type code at b[i]. The result aliases b unless the body had escapes, so
// callers copy it (string conversion does that anyway).
func (d *decoder) escaped(i int) (body []byte, aliased bool, next int, err error) {
	b := d.b
	var out []byte // set once the first escape is seen
	start := i + 1
	for j := start; j < len(b); j++ {
		k := bytes.IndexByte(b[j:], 0x00)
		if k < 0 {
			break
		}
		j += k
		if j+1 < len(b) && b[j+1] == escapeByte {
			out = append(out, b[start:j+1]...)
			start = j + 2
			j++
			continue
		}
		if out == nil {
			return b[start:j], true, j + 1, nil
		}
		return append(out, b[start:j]...), false, j + 1, nil
	}
	return nil, false, 0, d.errorf(i, "unterminated byte string")
}

// compactInt decodes codes 0x0c..0x1c: 0x14±n followed by n bytes.
func (d *decoder) compactInt(i int) (any, int, error) {
	code := int(d.b[i])
	n := code - codeIntZero
	neg := n < 0
	if neg {
		n = -n
	}
	body, err := d.fixed(i, n, "integer")
	if err != nil {
		return nil, 0, err
	}
	var raw uint64
	for _, c := range body {
		raw = raw<<8 | uint64(c)
	}
	next := i + 1 + n
	if !neg {
		if n > 0 && body[0] == 0 {
			d.nonCanonical = true // a shorter code would do
		}
		return fromUint64(raw).value(), next, nil
	}
	if body[0] == 0xff {
		d.nonCanonical = true // the magnitude fits in fewer bytes
	}
	// raw is the one's complement of the magnitude within n bytes.
	mag := ^raw
	if n < 8 {
		mag &= 1<<(8*n) - 1
	}
	if mag <= 1<<63 {
		return -int64(mag), next, nil // -int64(1<<63) wraps to MinInt64
	}
	return new(big.Int).Neg(new(big.Int).SetUint64(mag)), next, nil
}

// bigInt decodes codes 0x0b and 0x1d: a length byte (inverted for negative
// values) followed by that many bytes.
func (d *decoder) bigInt(i int) (any, int, error) {
	b := d.b
	if i+1 >= len(b) {
		return nil, 0, d.errorf(i, "truncated integer: missing length byte")
	}
	neg := b[i] == codeNegBigInt
	n := int(b[i+1])
	if neg {
		n ^= 0xff
	}
	if len(b)-i-2 < n {
		return nil, 0, d.errorf(i, "truncated integer: need %d bytes, have %d", n, len(b)-i-2)
	}
	body := b[i+2 : i+2+n]
	next := i + 2 + n
	if n <= maxCompactIntLen {
		d.nonCanonical = true
	}
	x := new(big.Int)
	if !neg {
		if n > 0 && body[0] == 0 {
			d.nonCanonical = true
		}
		x.SetBytes(body)
		return fromBig(x).value(), next, nil
	}
	if n > 0 && body[0] == 0xff {
		d.nonCanonical = true
	}
	mag := make([]byte, n)
	for k, c := range body {
		mag[k] = ^c
	}
	x.SetBytes(mag)
	return fromBig(x.Neg(x)).value(), next, nil
}
