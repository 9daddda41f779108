package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// generatorSeeds steer genTuple through every element kind.
func generatorSeeds() [][]byte {
	var seeds [][]byte
	for k := range byte(24) {
		seeds = append(seeds, []byte{3, k, 0x55, k, 0xaa, 7, k ^ 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	}
	return append(seeds, nil, []byte{5, 3, 3, 3, 3, 3, 3, 0})
}

// FuzzUnpack feeds arbitrary bytes to the decoder. It must never panic;
// anything it accepts must re-encode to the same bytes, unless the decoder
// flagged a non-canonical form, in which case the re-encoding must be a
// fixed point that decodes to the same values.
func FuzzUnpack(f *testing.F) {
	for _, v := range packVectors {
		f.Add(unhex(f, v.hex))
	}
	for _, s := range []string{"15", "0500ff", "0b f6 ff7fffffffffffffff", "1d 09 00ffffffffffffffff", "05 05 00 00ff 00", "01 6100ff", "3300"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decoder{b: b}
		t1, err := d.tuple()
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrInvalidEncoding) {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			if de.Offset < 0 || de.Offset >= len(b) {
				t.Fatalf("offset %d outside input of %d bytes", de.Offset, len(b))
			}
			return
		}
		if pub, err := Unpack(b); err != nil || !identical(pub, t1) {
			t.Fatalf("Unpack disagrees with the decoder: %v, %v", pub, err)
		}
		b2 := packAny(t, t1)
		if !d.nonCanonical && !bytes.Equal(b2, b) {
			t.Fatalf("canonical input did not round-trip\n  in % x\n out % x\n(%v)", b, b2, t1)
		}
		d2 := decoder{b: b2}
		t2, err := d2.tuple()
		if err != nil {
			t.Fatalf("re-encoding % x of %v does not decode: %v", b2, t1, err)
		}
		if d2.nonCanonical {
			t.Fatalf("Pack produced a non-canonical encoding % x", b2)
		}
		if !identical(t1, t2) {
			t.Fatalf("decode(encode(decode(b))) differs:\n%#v\n%#v", t1, t2)
		}
		if Compare(t1, t2) != 0 {
			t.Fatalf("Compare(%v, %v) != 0", t1, t2)
		}
		if countIncomplete(t1) == 0 {
			if b3, err := t1.PackChecked(); err != nil || !bytes.Equal(b3, b2) {
				t.Fatalf("PackChecked = % x, %v; want % x", b3, err, b2)
			}
		}
		_ = t1.String()
	})
}

// FuzzRoundTrip builds tuples of every supported type and checks that they
// pack canonically and decode to their normalized selves.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range generatorSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tup := genTuple(&byteSource{b: data}, 0)
		b := packAny(t, tup)

		switch n := countIncomplete(tup); {
		case n == 0:
			if p := tup.Pack(); !bytes.Equal(p, b) {
				t.Fatalf("Pack = % x, want % x", p, b)
			}
		case n == 1:
			if _, err := tup.PackChecked(); !errors.Is(err, ErrIncompleteVersionstamp) {
				t.Fatalf("PackChecked with a placeholder: %v", err)
			}
			k, err := tup.PackWithVersionstamp([]byte{0xaa})
			if err != nil {
				t.Fatalf("PackWithVersionstamp: %v", err)
			}
			body := k[:len(k)-4]
			if !bytes.Equal(body[1:], b) {
				t.Fatalf("PackWithVersionstamp body % x, want % x", body[1:], b)
			}
			off := int(binary.LittleEndian.Uint32(k[len(k)-4:]))
			if off+versionstampLen > len(body) || body[off-1] != codeVersionstamp || !bytes.Equal(body[off:off+10], incompleteTransactionVersion[:]) {
				t.Fatalf("offset %d does not point at the placeholder in % x", off, k)
			}
		default:
			if _, err := tup.PackWithVersionstamp(nil); !errors.Is(err, ErrMultipleIncompleteVersionstamps) {
				t.Fatalf("PackWithVersionstamp with %d placeholders: %v", n, err)
			}
		}

		d := decoder{b: b}
		dec, err := d.tuple()
		if err != nil {
			t.Fatalf("Unpack(% x) of %v: %v", b, tup, err)
		}
		if d.nonCanonical {
			t.Fatalf("encoding % x of %v flagged non-canonical", b, tup)
		}
		if want := normalized(tup); !identical(dec, want) {
			t.Fatalf("round trip of % x\n got %#v\nwant %#v", b, dec, want)
		}
		if Compare(dec, tup) != 0 {
			t.Fatalf("Compare(decoded, original) != 0 for %v", tup)
		}
		if b2 := packAny(t, dec); !bytes.Equal(b2, b) {
			t.Fatalf("re-encoding differs: % x vs % x", b2, b)
		}
	})
}

// FuzzOrder checks that Compare agrees with the byte order of encodings.
// Both tuples extend a shared prefix, so that comparisons often get past
// the first element.
func FuzzOrder(f *testing.F) {
	seeds := generatorSeeds()
	for i, s := range seeds {
		f.Add(seeds[(i+1)%len(seeds)], s, seeds[(i+7)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, shared, x, y []byte) {
		prefix := genTuple(&byteSource{b: shared}, 0)
		a := append(append(Tuple{}, prefix...), genTuple(&byteSource{b: x}, 0)...)
		b := append(append(Tuple{}, prefix...), genTuple(&byteSource{b: y}, 0)...)
		if len(shared) > 0 && shared[0]&0x80 != 0 {
			a, b = Tuple{a}, Tuple{b} // the same, one level down
		}
		c := Compare(a, b)
		if want := bytes.Compare(packAny(t, a), packAny(t, b)); c != want {
			t.Fatalf("Compare(%v, %v) = %d, byte order says %d\n% x\n% x", a, b, c, want, packAny(t, a), packAny(t, b))
		}
		if r := Compare(b, a); r != -c {
			t.Fatalf("Compare not antisymmetric: %d and %d", c, r)
		}
		if Compare(a, a) != 0 {
			t.Fatalf("Compare(a, a) != 0 for %v", a)
		}
	})
}
