package tuple

import (
	"bytes"
	"math"
	"math/big"
	"testing"
)

var (
	testUUID = UUID{0x11, 0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	testVS   = Versionstamp{TransactionVersion: [10]byte{0, 0, 0, 0xaa, 0, 0xbb, 0, 0xcc, 0, 0xdd}, UserVersion: 620}
)

// packVectors pairs tuples with encodings taken from design/tuple.md's test
// cases or derived by hand from its rules. want is what Unpack must return;
// nil means normalized(tuple).
var packVectors = []struct {
	name  string
	tuple Tuple
	hex   string
	want  Tuple
}{
	// The test cases printed in design/tuple.md.
	{"spec bytes", Tuple{[]byte("foo\x00bar")}, "01 666f6f 00ff 626172 00", nil},
	{"spec unicode", Tuple{"F\u00d4O\u0000bar"}, "02 46c3944f 00ff 626172 00", nil},
	{"spec nested", Tuple{Tuple{[]byte("foo\x00bar"), nil, Tuple{}}}, "05 01666f6f00ff62617200 00ff 0500 00", nil},
	{"spec int", Tuple{-5551212}, "11 ab4b93", nil},
	{"spec float", Tuple{float32(-42)}, "20 3dd7ffff", nil},

	{"empty", Tuple{}, "", nil},
	{"nil", Tuple{nil}, "00", nil},
	{"nil twice", Tuple{nil, nil}, "00 00", nil},
	{"empty nested", Tuple{Tuple{}}, "05 00", nil},
	{"nil nested tuple", Tuple{Tuple(nil)}, "05 00", Tuple{Tuple{}}},
	{"nested nil", Tuple{Tuple{nil}}, "05 00ff 00", nil},
	{"nested nil then int, nil", Tuple{Tuple{nil, 1}, nil}, "05 00ff 1501 00 00", nil},
	{"doubly nested", Tuple{Tuple{Tuple{nil}, nil}}, "05 05 00ff 00 00ff 00", nil},

	{"empty bytes", Tuple{[]byte{}}, "01 00", nil},
	{"nil bytes", Tuple{[]byte(nil)}, "01 00", Tuple{[]byte{}}},
	{"empty string", Tuple{""}, "02 00", nil},
	{"string NUL", Tuple{"\x00"}, "02 00ff 00", nil},
	{"string NUL 0xff", Tuple{"\x00\xff"}, "02 00ff ff 00", nil},
	{"bytes NULs", Tuple{[]byte{0, 0, 0}}, "01 00ff00ff00ff 00", nil},
	{"bytes 0xff", Tuple{[]byte{0xff, 0x00, 0xff}}, "01 ff00ffff 00", nil},

	{"int 0", Tuple{0}, "14", nil},
	{"int 1", Tuple{1}, "15 01", nil},
	{"int -1", Tuple{-1}, "13 fe", nil},
	{"int 255", Tuple{255}, "15 ff", nil},
	{"int 256", Tuple{256}, "16 0100", nil},
	{"int -255", Tuple{-255}, "13 00", nil},
	{"int -256", Tuple{-256}, "12 feff", nil},
	{"int 65536", Tuple{65536}, "17 010000", nil},
	{"int MaxInt64", Tuple{int64(math.MaxInt64)}, "1c 7fffffffffffffff", nil},
	{"int MinInt64", Tuple{int64(math.MinInt64)}, "0c 7fffffffffffffff", nil},
	{"int MinInt64+1", Tuple{int64(math.MinInt64 + 1)}, "0c 8000000000000000", nil},
	{"uint64 2^63", Tuple{uint64(1 << 63)}, "1c 8000000000000000", nil},
	{"uint64 max", Tuple{uint64(math.MaxUint64)}, "1c ffffffffffffffff", nil},
	{"uint small", Tuple{uint(7)}, "15 07", Tuple{int64(7)}},
	{"int8 -1", Tuple{int8(-1)}, "13 fe", Tuple{int64(-1)}},
	{"int16", Tuple{int16(-300)}, "12 fed3", Tuple{int64(-300)}},
	{"int32", Tuple{int32(math.MinInt32)}, "10 7fffffff", Tuple{int64(math.MinInt32)}},
	{"uint8", Tuple{uint8(255)}, "15 ff", Tuple{int64(255)}},
	{"uint16", Tuple{uint16(256)}, "16 0100", Tuple{int64(256)}},
	{"uint32", Tuple{uint32(math.MaxUint32)}, "18 ffffffff", Tuple{int64(math.MaxUint32)}},
	{"big small", Tuple{big.NewInt(5)}, "15 05", Tuple{int64(5)}},
	{"big value", Tuple{*big.NewInt(-5551212)}, "11 ab4b93", Tuple{int64(-5551212)}},
	{"big zero", Tuple{new(big.Int)}, "14", Tuple{int64(0)}},
	{"big uint64 max", Tuple{new(big.Int).SetUint64(math.MaxUint64)}, "1c ffffffffffffffff", Tuple{uint64(math.MaxUint64)}},
	{"big -2^63-1", Tuple{mustBig("-0x8000000000000001")}, "0c 7ffffffffffffffe", nil},
	{"big -(2^64-1)", Tuple{mustBig("-0xffffffffffffffff")}, "0c 0000000000000000", nil},
	{"big 2^64", Tuple{mustBig("0x10000000000000000")}, "1d 09 010000000000000000", nil},
	{"big -2^64", Tuple{mustBig("-0x10000000000000000")}, "0b f6 feffffffffffffffff", nil},
	{"big -(2^72-1)", Tuple{mustBig("-0xffffffffffffffffff")}, "0b f6 000000000000000000", nil},
	{"big 2^2040-1", Tuple{new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 2040), big.NewInt(1))}, "1d ff" + repeatHex("ff", 255), nil},
	{"big -(2^2040-1)", Tuple{new(big.Int).Sub(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 2040))}, "0b 00" + repeatHex("00", 255), nil},

	{"float32 0", Tuple{float32(0)}, "20 80000000", nil},
	{"float32 -0", Tuple{float32(math.Copysign(0, -1))}, "20 7fffffff", nil},
	{"float32 1", Tuple{float32(1)}, "20 bf800000", nil},
	{"float32 +Inf", Tuple{float32(math.Inf(1))}, "20 ff800000", nil},
	{"float32 -Inf", Tuple{float32(math.Inf(-1))}, "20 007fffff", nil},
	{"float32 NaN", Tuple{math.Float32frombits(0x7fc00000)}, "20 ffc00000", nil},
	{"float32 -NaN", Tuple{math.Float32frombits(0xffc00000)}, "20 003fffff", nil},
	{"float64 0", Tuple{0.0}, "21 8000000000000000", nil},
	{"float64 -0", Tuple{math.Copysign(0, -1)}, "21 7fffffffffffffff", nil},
	{"float64 1", Tuple{1.0}, "21 bff0000000000000", nil},
	{"float64 -1", Tuple{-1.0}, "21 400fffffffffffff", nil},
	{"float64 +Inf", Tuple{math.Inf(1)}, "21 fff0000000000000", nil},
	{"float64 -Inf", Tuple{math.Inf(-1)}, "21 000fffffffffffff", nil},
	{"float64 NaN", Tuple{math.NaN()}, "21 fff8000000000001", nil},
	{"float64 -NaN", Tuple{math.Float64frombits(0xfff8000000000000)}, "21 0007ffffffffffff", nil},

	{"false", Tuple{false}, "26", nil},
	{"true", Tuple{true}, "27", nil},
	{"uuid", Tuple{testUUID}, "30 1100aabbccddeeff1100aabbccddeeff", nil},
	{"versionstamp", Tuple{testVS}, "33 000000aa00bb00cc00dd 026c", nil},

	{"queue key", Tuple{"jobs", 3, int64(1700000000000), 5, testUUID},
		"02 6a6f627300 1503 1a018bcfe56800 1505 30 1100aabbccddeeff1100aabbccddeeff", nil},
}

func repeatHex(h string, n int) string {
	return string(bytes.Repeat([]byte(h), n))
}

func TestPackVectors(t *testing.T) {
	for _, v := range packVectors {
		t.Run(v.name, func(t *testing.T) {
			want := unhex(t, v.hex)
			got, err := v.tuple.PackChecked()
			if err != nil {
				t.Fatalf("PackChecked: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Pack(%v)\n got % x\nwant % x", v.tuple, got, want)
			}
			if p := v.tuple.Pack(); !bytes.Equal(p, want) {
				t.Fatalf("Pack and PackChecked disagree: % x", p)
			}
			dec, err := Unpack(want)
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			wantDec := v.want
			if wantDec == nil {
				wantDec = normalized(v.tuple)
			}
			if !identical(dec, wantDec) {
				t.Fatalf("Unpack(% x)\n got %#v\nwant %#v", want, dec, wantDec)
			}
			if Compare(dec, v.tuple) != 0 {
				t.Fatalf("Compare(decoded, original) != 0")
			}
		})
	}
}

// Non-canonical encodings that other writers could produce (or that appear
// in fuzzed input) decode to the value they denote, in normalized form.
func TestUnpackNonCanonical(t *testing.T) {
	cases := []struct {
		hex  string
		want any
	}{
		{"15 00", int64(0)},
		{"16 0005", int64(5)},
		{"12 fffa", int64(-5)},
		{"13 ff", int64(0)},
		{"0c ffffffffffffffff", int64(0)},
		{"1d 00", int64(0)},
		{"1d 01 05", int64(5)},
		{"1d 08 ffffffffffffffff", uint64(math.MaxUint64)},
		{"1d 09 00ffffffffffffffff", uint64(math.MaxUint64)},
		{"0b fe fa", int64(-5)},
		{"0b ff", int64(0)},
		{"0b f7 7fffffffffffffff", int64(math.MinInt64)},
		{"0b f6 ff7fffffffffffffff", int64(math.MinInt64)},
	}
	for _, v := range cases {
		d := decoder{b: unhex(t, v.hex)}
		got, err := d.tuple()
		if err != nil {
			t.Errorf("Unpack(%s): %v", v.hex, err)
			continue
		}
		if !identical(got, Tuple{v.want}) {
			t.Errorf("Unpack(%s) = %#v, want %#v", v.hex, got, v.want)
		}
		if !d.nonCanonical {
			t.Errorf("Unpack(%s) not flagged as non-canonical", v.hex)
		}
	}
}

func TestTupleString(t *testing.T) {
	cases := []struct {
		tuple Tuple
		want  string
	}{
		// The first five are the official binding's own expectations.
		{Tuple{[]byte("hello"), "world", 42, 0x99}, `(b"hello", "world", 42, 153)`},
		{Tuple{nil, Tuple{"Ok", Tuple{1, 2}, "Go"}, 42, 0x99}, `(<nil>, ("Ok", (1, 2), "Go"), 42, 153)`},
		{Tuple{"Bool", true, false}, `("Bool", true, false)`},
		{Tuple{"UUID", testUUID}, `("UUID", UUID(1100aabb-ccdd-eeff-1100-aabbccddeeff))`},
		{Tuple{"Versionstamp", testVS}, `("Versionstamp", Versionstamp(\x00\x00\x00\xaa\x00\xbb\x00\xcc\x00\xdd, 620))`},
		{Tuple{}, `()`},
		{Tuple{[]byte("a\\b\x00\xff")}, `(b"a\\b\x00\xff")`},
		{Tuple{*big.NewInt(-7), big.NewInt(8), 1.5, float32(2)}, `(-7, 8, 1.5, 2)`},
	}
	for _, v := range cases {
		if got := v.tuple.String(); got != v.want {
			t.Errorf("String() = %s, want %s", got, v.want)
		}
	}
}

func TestVersionstampBasics(t *testing.T) {
	v := IncompleteVersionstamp(0x0102)
	if v.IsComplete() {
		t.Fatal("IncompleteVersionstamp is complete")
	}
	if got, want := v.Bytes(), unhex(t, "ffffffffffffffffffff 0102"); !bytes.Equal(got, want) {
		t.Fatalf("Bytes() = % x, want % x", got, want)
	}
	if !testVS.IsComplete() {
		t.Fatal("testVS is incomplete")
	}
	if got := (UUID{}).String(); got != "00000000-0000-0000-0000-000000000000" {
		t.Fatalf("UUID.String() = %s", got)
	}
}

func TestUnpackDoesNotAlias(t *testing.T) {
	in := Tuple{[]byte("abc"), []byte("a\x00c"), "s"}.Pack()
	out, err := Unpack(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	if !identical(out, Tuple{[]byte("abc"), []byte("a\x00c"), "s"}) {
		t.Fatalf("decoded values changed with the input: %v", out)
	}
}

// The decoder keeps its own stack, so deep nesting costs memory, not
// goroutine stack, and both deep valid and deep broken inputs are handled.
func TestUnpackDeepNesting(t *testing.T) {
	const depth = 100_000
	open := bytes.Repeat([]byte{codeNested}, depth)
	if _, err := Unpack(open); err == nil {
		t.Fatal("unterminated nesting accepted")
	}
	valid := append(bytes.Clone(open), make([]byte, depth)...)
	got, err := Unpack(valid)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if len(got) != 1 {
			t.Fatalf("unexpected shape %v", got)
		}
		got = got[0].(Tuple)
	}
	if len(got) != 0 {
		t.Fatal("innermost tuple not empty")
	}
}
