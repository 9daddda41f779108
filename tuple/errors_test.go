package tuple

import (
	"errors"
	"math/big"
	"slices"
	"testing"
)

func TestUnpackErrors(t *testing.T) {
	cases := []struct {
		hex    string
		offset int
	}{
		{"01", 0},
		{"01 61", 0},
		{"02 61 00ff", 0},
		{"15 01 02 6100ff", 2},
		{"15", 0},
		{"1c 0102", 0},
		{"0c 01", 0},
		{"1d", 0},
		{"1d 09 01", 0},
		{"0b f6 01", 0},
		{"20 000000", 0},
		{"21", 0},
		{"30 00", 0},
		{"33 000000", 0},
		{"05", 0},
		{"05 1501", 0},
		{"1501 05 05 00", 2},
		{"05 00ff", 0},
		{"00 ff", 1}, // 0x00 0xff means nil only inside a nested tuple
		{"03", 0},    // deprecated nested tuple
		{"04", 0},
		{"0a", 0}, // reserved negative big integer
		{"1e", 0}, // reserved positive big integer
		{"22", 0}, // reserved long double
		{"23", 0}, // reserved decimal
		{"25", 0}, // deprecated true
		{"31", 0}, // reserved 64-bit id
		{"32", 0}, // reserved 80-bit versionstamp
		{"40", 0}, // user type
		{"ff", 0}, // escape
		{"14 ff", 1},
	}
	for _, c := range cases {
		b := unhex(t, c.hex)
		got, err := Unpack(b)
		if err == nil {
			t.Errorf("Unpack(%s) = %v, want error", c.hex, got)
			continue
		}
		if !errors.Is(err, ErrInvalidEncoding) {
			t.Errorf("Unpack(%s): %v does not wrap ErrInvalidEncoding", c.hex, err)
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Unpack(%s): %T is not a *DecodeError", c.hex, err)
			continue
		}
		if de.Offset != c.offset {
			t.Errorf("Unpack(%s): offset %d, want %d (%v)", c.hex, de.Offset, c.offset, err)
		}
		if got != nil {
			t.Errorf("Unpack(%s) returned a tuple with its error", c.hex)
		}
	}
}

func TestPackErrors(t *testing.T) {
	tooBig := new(big.Int).Lsh(big.NewInt(1), 2040) // 256 bytes of magnitude
	cases := []struct {
		name  string
		tuple Tuple
		path  []int
		err   error
	}{
		{"struct", Tuple{1, struct{}{}}, []int{1}, ErrUnsupportedType},
		{"[]any is not a Tuple", Tuple{[]any{1}}, []int{0}, ErrUnsupportedType},
		{"nested", Tuple{"a", Tuple{nil, Tuple{map[int]int{}}}}, []int{1, 1, 0}, ErrUnsupportedType},
		{"nil big", Tuple{(*big.Int)(nil)}, []int{0}, ErrUnsupportedType},
		{"big too large", Tuple{tooBig}, []int{0}, ErrIntegerTooLarge},
		{"negative big too large", Tuple{new(big.Int).Neg(tooBig)}, []int{0}, ErrIntegerTooLarge},
		{"incomplete versionstamp", Tuple{Tuple{IncompleteVersionstamp(1)}}, []int{0, 0}, ErrIncompleteVersionstamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.tuple.PackChecked()
			if !errors.Is(err, c.err) {
				t.Fatalf("PackChecked: %v, want %v", err, c.err)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) || !slices.Equal(ee.Path, c.path) {
				t.Fatalf("PackChecked: %#v, want an *EncodeError with path %v", err, c.path)
			}
			defer func() {
				r := recover()
				if e, ok := r.(error); !ok || !errors.Is(e, c.err) {
					t.Fatalf("Pack panicked with %v, want %v", r, c.err)
				}
			}()
			c.tuple.Pack()
		})
	}
}

func TestEncodeErrorMessage(t *testing.T) {
	_, err := Tuple{"a", Tuple{nil, 1.5, struct{}{}}}.PackChecked()
	want := "tuple: unsupported element type: element at index 1.2 (type struct {})"
	if err == nil || err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
