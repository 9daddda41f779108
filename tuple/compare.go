package tuple

import (
	"bytes"
	"cmp"
	"strings"
)

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b, in
// exactly the order bytes.Compare gives their packed forms: element by
// element, a proper prefix first. It works on unpackable tuples too (e.g.
// with incomplete versionstamps, ordered by their bytes). It panics with an
// *EncodeError on an element of an unsupported type, as Pack does.
func Compare(a, b Tuple) int {
	for i := range min(len(a), len(b)) {
		if c := compareElements(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// The ranks of element kinds are their type codes, so that kinds order as
// their encodings do. All integers share one rank: their codes 0x0b..0x1d
// are themselves ordered by value.
const rankInteger = codeIntZero

func rank(e any) int {
	switch x := e.(type) {
	case nil:
		return codeNil
	case []byte:
		return codeBytes
	case string:
		return codeString
	case Tuple:
		return codeNested
	case float32:
		return codeFloat32
	case float64:
		return codeFloat64
	case bool:
		if x {
			return codeTrue
		}
		return codeFalse
	case UUID:
		return codeUUID
	case Versionstamp:
		return codeVersionstamp
	}
	if _, ok := asInteger(e); ok {
		return rankInteger
	}
	panic(&EncodeError{Value: e, Err: ErrUnsupportedType})
}

func compareElements(a, b any) int {
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	switch x := a.(type) {
	case []byte:
		// Escaping 0x00 as 0x00 0xff keeps plain byte order; see appendEscaped.
		return bytes.Compare(x, b.([]byte))
	case string:
		return strings.Compare(x, b.(string))
	case Tuple:
		return Compare(x, b.(Tuple))
	case float32:
		return cmp.Compare(float32Key(x), float32Key(b.(float32)))
	case float64:
		return cmp.Compare(float64Key(x), float64Key(b.(float64)))
	case UUID:
		y := b.(UUID)
		return bytes.Compare(x[:], y[:])
	case Versionstamp:
		y := b.(Versionstamp)
		if c := bytes.Compare(x.TransactionVersion[:], y.TransactionVersion[:]); c != 0 {
			return c
		}
		return cmp.Compare(x.UserVersion, y.UserVersion)
	case nil, bool:
		return 0 // the rank already told false from true
	}
	return compareIntegers(a, b)
}

func compareIntegers(a, b any) int {
	// rank has already checked that both are integers.
	na, _ := asInteger(a)
	nb, _ := asInteger(b)
	return na.compare(nb)
}
