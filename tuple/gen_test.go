package tuple

import (
	"encoding/binary"
	"math"
	"math/big"
)

// byteSource turns fuzz input into choices; once exhausted it yields zeros,
// so every input maps to some tuple.
type byteSource struct{ b []byte }

func (s *byteSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *byteSource) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = s.byte()
	}
	return out
}

func (s *byteSource) uint64() uint64 { return binary.BigEndian.Uint64(s.bytes(8)) }

// Values near the encoding's length boundaries, where off-by-one bugs live.
var interestingInts = []int64{
	0, 1, -1, 255, 256, -255, -256, 65535, 65536, -65535, -65536,
	math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
}

var interestingFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(),
	math.Float64frombits(0xfff8000000000001), // negative NaN with payload
	math.Float64frombits(0x7ff0000000000001), // signaling NaN
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64,
}

// genTuple builds a tuple of every supported element type from fuzz input.
// depth bounds nesting so that the generator always terminates quickly.
func genTuple(s *byteSource, depth int) Tuple {
	n := int(s.byte() % 6)
	t := make(Tuple, 0, n)
	for range n {
		t = append(t, genElement(s, depth))
	}
	return t
}

// genBytes favours 0x00 and 0xff, the bytes escaping is about.
func genBytes(s *byteSource) []byte {
	b := s.bytes(int(s.byte() % 12))
	for i, c := range b {
		switch c % 4 {
		case 0:
			b[i] = 0x00
		case 1:
			b[i] = 0xff
		}
	}
	return b
}

func genElement(s *byteSource, depth int) any {
	switch k := s.byte() % 24; k {
	case 0:
		return nil
	case 1:
		return genBytes(s)
	case 2:
		return string(genBytes(s)) // not always valid UTF-8, as in FDB
	case 3:
		if depth > 3 {
			return nil
		}
		return genTuple(s, depth+1)
	case 4:
		return int64(s.uint64())
	case 5:
		// Small magnitudes of every byte length.
		v := int64(s.uint64() >> (s.byte() % 64))
		if s.byte()%2 == 0 {
			v = -v
		}
		return v
	case 6:
		return interestingInts[int(s.byte())%len(interestingInts)]
	case 7:
		return s.uint64()
	case 8:
		x := int64(s.uint64())
		switch s.byte() % 8 {
		case 0:
			return int(x)
		case 1:
			return int8(x)
		case 2:
			return int16(x)
		case 3:
			return int32(x)
		case 4:
			return uint(x)
		case 5:
			return uint8(x)
		case 6:
			return uint16(x)
		default:
			return uint32(x)
		}
	case 9, 10:
		x := new(big.Int).SetBytes(s.bytes(int(s.byte() % 40)))
		if s.byte()%2 == 0 {
			x.Neg(x)
		}
		if k == 10 {
			return *x
		}
		return x
	case 11:
		// Around ±2^64, where the compact and length-prefixed forms meet.
		x := new(big.Int).Lsh(big.NewInt(1), 64)
		x.Add(x, big.NewInt(int64(s.byte()%5)-2))
		if s.byte()%2 == 0 {
			x.Neg(x)
		}
		return x
	case 12:
		return math.Float32frombits(binary.BigEndian.Uint32(s.bytes(4)))
	case 13:
		return math.Float64frombits(s.uint64())
	case 14:
		f := interestingFloats[int(s.byte())%len(interestingFloats)]
		if s.byte()%2 == 0 {
			return float32(f)
		}
		return f
	case 15:
		return s.byte()%2 == 0
	case 16:
		return UUID(s.bytes(16))
	case 17:
		return Versionstamp{TransactionVersion: [10]byte(s.bytes(10)), UserVersion: binary.BigEndian.Uint16(s.bytes(2))}
	case 18:
		return IncompleteVersionstamp(binary.BigEndian.Uint16(s.bytes(2)))
	case 19:
		if depth > 3 {
			return Tuple(nil)
		}
		return Tuple{nil, genElement(s, depth+1)}
	case 20:
		return []byte(nil)
	default:
		return int64(int8(s.byte()))
	}
}
