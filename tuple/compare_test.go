package tuple

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"
)

// sortedTuples is in strictly ascending order by the spec's rules.
var sortedTuples = []Tuple{
	{},
	{nil},
	{nil, nil},
	{nil, 1},
	{[]byte{}},
	{[]byte{0}},
	{[]byte{0, 0}},
	{[]byte{0, 1}},
	{[]byte("a")},
	{[]byte("a"), nil},
	{[]byte("a\x00")},
	{[]byte("a\xff")},
	{""},
	{"\x00"},
	{"a"},
	{"a", "b"},
	{"a\x00"},
	{"b"},
	{Tuple{}},
	{Tuple{}, nil},
	{Tuple{nil}},
	{Tuple{nil, nil}},
	{Tuple{nil, "a"}},
	{Tuple{"a"}},
	{Tuple{"a"}, Tuple{}},
	{Tuple{"a", nil}},
	{Tuple{"a\x00"}},
	{Tuple{Tuple{}}},
	{Tuple{Tuple{nil}}},
	{Tuple{1}},
	{mustBig("-0x" + repeatHex("ff", 255))},
	{mustBig("-0x10000000000000000")},
	{mustBig("-0xffffffffffffffff")},
	{mustBig("-0x8000000000000001")},
	{int64(math.MinInt64)},
	{int32(math.MinInt32)},
	{-65536},
	{-256},
	{int16(-255)},
	{-1},
	{0},
	{0, nil},
	{0, 1},
	{uint8(1)},
	{255},
	{256},
	{uint32(math.MaxUint32)},
	{int64(math.MaxInt64)},
	{uint64(1 << 63)},
	{uint(math.MaxUint64)},
	{*mustBig("0x10000000000000000")},
	{mustBig("0x" + repeatHex("ff", 255))},
	{float32(math.Float32frombits(0xffc00001))},
	{float32(math.Float32frombits(0xffc00000))},
	{float32(math.Inf(-1))},
	{float32(-1)},
	{float32(math.Copysign(0, -1))},
	{float32(0)},
	{float32(math.SmallestNonzeroFloat32)},
	{float32(1)},
	{float32(math.Inf(1))},
	{float32(math.NaN())},
	{math.Float64frombits(0xfff8000000000001)},
	{math.Inf(-1)},
	{-math.MaxFloat64},
	{-1.0},
	{math.Copysign(0, -1)},
	{0.0},
	{1.0},
	{math.Inf(1)},
	{math.NaN()},
	{false},
	{true},
	{UUID{}},
	{testUUID},
	{UUID{0xff}},
	{Versionstamp{}},
	{Versionstamp{UserVersion: 1}},
	{testVS},
	{IncompleteVersionstamp(0)},
	{IncompleteVersionstamp(1)},
}

func TestCompareMatchesByteOrder(t *testing.T) {
	packed := make([][]byte, len(sortedTuples))
	for i, tup := range sortedTuples {
		packed[i] = packAny(t, tup)
	}
	for i := range sortedTuples {
		for j := range sortedTuples {
			want := sign(i - j)
			if got := Compare(sortedTuples[i], sortedTuples[j]); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", sortedTuples[i], sortedTuples[j], got, want)
			}
			if got := bytes.Compare(packed[i], packed[j]); got != want {
				t.Errorf("bytes.Compare(pack %v, pack %v) = %d, want %d", sortedTuples[i], sortedTuples[j], got, want)
			}
		}
	}
}

// Values equal across Go types compare equal, as their encodings are equal.
func TestCompareAcrossIntegerTypes(t *testing.T) {
	same := []any{int8(7), int16(7), int32(7), int64(7), 7, uint(7), uint8(7), uint16(7), uint32(7), uint64(7), big.NewInt(7), *big.NewInt(7)}
	for _, a := range same {
		for _, b := range same {
			if c := Compare(Tuple{a}, Tuple{b}); c != 0 {
				t.Errorf("Compare(%T 7, %T 7) = %d", a, b, c)
			}
		}
	}
}

func TestComparePanicsOnUnsupportedType(t *testing.T) {
	defer func() {
		r := recover()
		if e, ok := r.(error); !ok || !errors.Is(e, ErrUnsupportedType) {
			t.Fatalf("recovered %v, want ErrUnsupportedType", r)
		}
	}()
	Compare(Tuple{1, struct{}{}}, Tuple{1, 2})
}
