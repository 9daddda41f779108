package tuple

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// String renders t like the official binding, e.g.
// ("queue", 3, b"\x00\x01", UUID(1100aabb-...), <nil>), so that logs read
// the same whichever package produced them.
func (t Tuple) String() string {
	var sb strings.Builder
	writeTuple(&sb, t)
	return sb.String()
}

func writeTuple(sb *strings.Builder, t Tuple) {
	sb.WriteByte('(')
	for i, el := range t {
		if i > 0 {
			sb.WriteString(", ")
		}
		switch x := el.(type) {
		case Tuple:
			writeTuple(sb, x)
		case nil:
			sb.WriteString("<nil>")
		case string:
			sb.WriteString(strconv.Quote(x))
		case []byte:
			sb.WriteString(`b"`)
			sb.WriteString(printable(x))
			sb.WriteByte('"')
		case UUID:
			sb.WriteString("UUID(")
			sb.WriteString(x.String())
			sb.WriteByte(')')
		case big.Int:
			// big.Int's String has a pointer receiver; %v of the value
			// would print its internal fields.
			sb.WriteString(x.String())
		default:
			fmt.Fprintf(sb, "%v", x)
		}
	}
	sb.WriteByte(')')
}

// printable is fdb.Printable: printable ASCII as is, a backslash doubled,
// every other byte as \xNN.
func printable(b []byte) string {
	const hexDigits = "0123456789abcdef"
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c >= 32 && c < 127:
			sb.WriteByte(c)
		default:
			sb.WriteString(`\x`)
			sb.WriteByte(hexDigits[c>>4])
			sb.WriteByte(hexDigits[c&0xf])
		}
	}
	return sb.String()
}
