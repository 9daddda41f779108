package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestPackWithVersionstamp(t *testing.T) {
	prefix := []byte("pre")
	tup := Tuple{"q", Tuple{1, IncompleteVersionstamp(9)}}
	got, err := tup.PackWithVersionstamp(prefix)
	if err != nil {
		t.Fatal(err)
	}
	// prefix, "q", nested: 1, versionstamp placeholder, end; then the offset
	// of the placeholder's first byte: 3 (prefix) + 3 ("q") + 1 (0x05) + 2
	// (the int) + 1 (0x33) = 10.
	want := unhex(t, "707265 027100 05 1501 33 ffffffffffffffffffff 0009 00 0a000000")
	if !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
	off := binary.LittleEndian.Uint32(got[len(got)-4:])
	if !bytes.Equal(got[off:off+10], incompleteTransactionVersion[:]) {
		t.Fatalf("offset %d does not point at the placeholder", off)
	}

	s := NewSubspace(prefix)
	if sk, err := s.PackWithVersionstamp(tup); err != nil || !bytes.Equal(sk, want) {
		t.Fatalf("Subspace.PackWithVersionstamp = % x, %v", sk, err)
	}
	if nk, err := tup.PackWithVersionstamp(nil); err != nil || binary.LittleEndian.Uint32(nk[len(nk)-4:]) != 7 {
		t.Fatalf("without prefix: % x, %v", nk, err)
	}
}

func TestPackWithVersionstampErrors(t *testing.T) {
	complete := Versionstamp{UserVersion: 1}
	cases := []struct {
		tuple Tuple
		err   error
	}{
		{Tuple{}, ErrNoIncompleteVersionstamp},
		{Tuple{complete}, ErrNoIncompleteVersionstamp},
		{Tuple{IncompleteVersionstamp(0), Tuple{IncompleteVersionstamp(1)}}, ErrMultipleIncompleteVersionstamps},
		{Tuple{IncompleteVersionstamp(0), struct{}{}}, ErrUnsupportedType},
	}
	for _, c := range cases {
		if b, err := c.tuple.PackWithVersionstamp(nil); !errors.Is(err, c.err) || b != nil {
			t.Errorf("PackWithVersionstamp(%v) = % x, %v; want %v", c.tuple, b, err, c.err)
		}
	}
}

func TestHasIncompleteVersionstamp(t *testing.T) {
	cases := []struct {
		tuple Tuple
		has   bool
		err   error
	}{
		{Tuple{}, false, nil},
		{Tuple{testVS}, false, nil},
		{Tuple{IncompleteVersionstamp(0)}, true, nil},
		{Tuple{1, Tuple{Tuple{IncompleteVersionstamp(0)}}}, true, nil},
		{Tuple{IncompleteVersionstamp(0), Tuple{IncompleteVersionstamp(0)}}, true, ErrMultipleIncompleteVersionstamps},
	}
	for _, c := range cases {
		has, err := c.tuple.HasIncompleteVersionstamp()
		if has != c.has || !errors.Is(err, c.err) {
			t.Errorf("HasIncompleteVersionstamp(%v) = %v, %v; want %v, %v", c.tuple, has, err, c.has, c.err)
		}
	}
}

// A complete versionstamp read back from the database round-trips through
// plain Pack; an incomplete one decodes too (e.g. from a raw key) and keeps
// its placeholder.
func TestVersionstampRoundTrip(t *testing.T) {
	for _, v := range []Versionstamp{testVS, IncompleteVersionstamp(3)} {
		b := packAny(t, Tuple{v})
		got, err := Unpack(b)
		if err != nil || !identical(got, Tuple{v}) {
			t.Fatalf("Unpack(% x) = %v, %v", b, got, err)
		}
	}
}
