package tuple

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
)

// integer is an integer element in canonical form. The canonical encoding
// of an integer depends only on its value, so one representation per value
// lets the encoder, the decoder and Compare agree whatever Go type the value
// came in. kind picks the field that holds it.
type integer struct {
	kind intKind
	i    int64    // kindInt64
	u    uint64   // kindUint64: always above math.MaxInt64
	big  *big.Int // kindNegBig, kindPosBig: always outside the 64-bit range
}

// intKind values are ordered by the values they can hold, so that integers
// of different kinds compare by kind.
type intKind int8

const (
	kindNegBig intKind = iota
	kindInt64
	kindUint64
	kindPosBig
)

// asInteger classifies any supported Go integer without allocating. ok is
// false for non-integers and for a nil *big.Int. The result may point at
// the caller's *big.Int; it is only read.
func asInteger(e any) (n integer, ok bool) {
	switch x := e.(type) {
	case int:
		return integer{kind: kindInt64, i: int64(x)}, true
	case int8:
		return integer{kind: kindInt64, i: int64(x)}, true
	case int16:
		return integer{kind: kindInt64, i: int64(x)}, true
	case int32:
		return integer{kind: kindInt64, i: int64(x)}, true
	case int64:
		return integer{kind: kindInt64, i: x}, true
	case uint:
		return fromUint64(uint64(x)), true
	case uint8:
		return integer{kind: kindInt64, i: int64(x)}, true
	case uint16:
		return integer{kind: kindInt64, i: int64(x)}, true
	case uint32:
		return integer{kind: kindInt64, i: int64(x)}, true
	case uint64:
		return fromUint64(x), true
	case *big.Int:
		if x == nil {
			return integer{}, false
		}
		return fromBig(x), true
	case big.Int:
		return fromBig(&x), true
	}
	return integer{}, false
}

func fromUint64(u uint64) integer {
	if u <= math.MaxInt64 {
		return integer{kind: kindInt64, i: int64(u)}
	}
	return integer{kind: kindUint64, u: u}
}

func fromBig(x *big.Int) integer {
	switch {
	case x.IsInt64():
		return integer{kind: kindInt64, i: x.Int64()}
	case x.IsUint64():
		return integer{kind: kindUint64, u: x.Uint64()}
	case x.Sign() < 0:
		return integer{kind: kindNegBig, big: x}
	}
	return integer{kind: kindPosBig, big: x}
}

// value returns n as the decoder reports it: int64, uint64 or *big.Int,
// the types the official binding decodes to.
func (n integer) value() any {
	switch n.kind {
	case kindInt64:
		return n.i
	case kindUint64:
		return n.u
	}
	return n.big
}

func (n integer) compare(m integer) int {
	if n.kind != m.kind {
		return cmp.Compare(n.kind, m.kind)
	}
	switch n.kind {
	case kindInt64:
		return cmp.Compare(n.i, m.i)
	case kindUint64:
		return cmp.Compare(n.u, m.u)
	}
	return n.big.Cmp(m.big)
}

func appendInteger(buf []byte, n integer) ([]byte, error) {
	switch n.kind {
	case kindInt64:
		return appendInt64(buf, n.i), nil
	case kindUint64:
		return appendUint64(buf, n.u), nil
	}
	return appendBigInt(buf, n.big)
}

// appendInt64 writes the compact encoding: 0x14 for zero, otherwise 0x14±n
// followed by the n low-order bytes of the value (positive) or of its one's
// complement (negative), n being the byte length of the magnitude.
func appendInt64(buf []byte, v int64) []byte {
	if v >= 0 {
		return appendUint64(buf, uint64(v))
	}
	mag := uint64(-v) // also right for MinInt64: the wrapped value is 1<<63
	n := (bits.Len64(mag) + 7) / 8
	buf = append(buf, byte(codeIntZero-n))
	return appendLowBytes(buf, ^mag, n)
}

func appendUint64(buf []byte, u uint64) []byte {
	n := (bits.Len64(u) + 7) / 8
	buf = append(buf, byte(codeIntZero+n))
	return appendLowBytes(buf, u, n)
}

func appendLowBytes(buf []byte, u uint64, n int) []byte {
	var scratch [8]byte
	binary.BigEndian.PutUint64(scratch[:], u)
	return append(buf, scratch[8-n:]...)
}

// appendBigInt handles values outside the 64-bit range; smaller ones must
// have been normalized away first so that they get the compact codes.
func appendBigInt(buf []byte, x *big.Int) ([]byte, error) {
	n := (x.BitLen() + 7) / 8
	if n > math.MaxUint8 {
		return buf, ErrIntegerTooLarge
	}
	if n <= maxCompactIntLen {
		// Only negative values in [-(2^64-1), -2^63-1] get here.
		buf = append(buf, byte(codeIntZero-n))
	} else if x.Sign() > 0 {
		buf = append(buf, codePosBigInt, byte(n))
	} else {
		buf = append(buf, codeNegBigInt, byte(n)^0xff)
	}
	body := len(buf)
	buf = append(buf, make([]byte, n)...)
	x.FillBytes(buf[body:]) // FillBytes writes the magnitude
	if x.Sign() < 0 {
		for i := body; i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
	}
	return buf, nil
}
