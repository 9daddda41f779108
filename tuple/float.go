package tuple

import (
	"encoding/binary"
	"math"
)

// The tuple layer stores IEEE floats big-endian with negative values fully
// inverted and non-negative values with only the sign bit flipped. That maps
// the IEEE total order (including -0 < +0 and NaNs at both ends, by sign)
// onto unsigned byte order. The same keys also give Compare its float order.

func float32Key(f float32) uint32 {
	u := math.Float32bits(f)
	if u&(1<<31) != 0 {
		return ^u
	}
	return u ^ (1 << 31)
}

func float32FromKey(k uint32) float32 {
	if k&(1<<31) != 0 {
		return math.Float32frombits(k ^ (1 << 31))
	}
	return math.Float32frombits(^k)
}

func float64Key(f float64) uint64 {
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		return ^u
	}
	return u ^ (1 << 63)
}

func float64FromKey(k uint64) float64 {
	if k&(1<<63) != 0 {
		return math.Float64frombits(k ^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

func appendFloat32(buf []byte, f float32) []byte {
	buf = append(buf, codeFloat32)
	return binary.BigEndian.AppendUint32(buf, float32Key(f))
}

func appendFloat64(buf []byte, f float64) []byte {
	buf = append(buf, codeFloat64)
	return binary.BigEndian.AppendUint64(buf, float64Key(f))
}
