package tuple

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/big"
	"strings"
	"testing"
)

// unhex decodes a hex string that may contain spaces for readability.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// packAny packs t even if it holds incomplete versionstamps, so that tests
// about order and round trips need not avoid them.
func packAny(t testing.TB, tup Tuple) []byte {
	t.Helper()
	b, err := appendTuple(nil, tup, true)
	if err != nil {
		t.Fatalf("pack %v: %v", tup, err)
	}
	return b
}

// normalized returns the tuple Unpack should produce for tup: integers in
// their decoded representation, nil []byte and Tuple as empty ones.
func normalized(tup Tuple) Tuple {
	out := Tuple{}
	for _, el := range tup {
		switch x := el.(type) {
		case Tuple:
			out = append(out, normalized(x))
		case []byte:
			out = append(out, append([]byte{}, x...))
		default:
			if n, ok := asInteger(el); ok {
				out = append(out, n.value())
			} else {
				out = append(out, el)
			}
		}
	}
	return out
}

// identical reports whether two tuples hold the same dynamic types and
// values. Unlike reflect.DeepEqual it treats floats by bit pattern (NaN
// equals itself, -0 differs from +0) and compares *big.Int by value.
func identical(a, b Tuple) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if !identicalElements(a[i], b[i]) {
			return false
		}
	}
	return true
}

func identicalElements(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case Tuple:
		y, ok := b.(Tuple)
		return ok && identical(x, y)
	case []byte:
		y, ok := b.([]byte)
		return ok && (x == nil) == (y == nil) && bytes.Equal(x, y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case string, int64, uint64, bool, UUID, Versionstamp:
		return a == b
	}
	return false
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// mustBig parses a big integer literal for test tables.
func mustBig(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 0)
	if !ok {
		panic("bad big int " + s)
	}
	return x
}
