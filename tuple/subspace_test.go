package tuple

import (
	"bytes"
	"errors"
	"testing"
)

func TestSubspace(t *testing.T) {
	raw := []byte{0xfe, 'q'}
	s := NewSubspace(raw)
	raw[0] = 0 // NewSubspace must have copied
	if got := s.Bytes(); !bytes.Equal(got, []byte{0xfe, 'q'}) {
		t.Fatalf("Bytes() = % x", got)
	}
	s.Bytes()[0] = 0 // and Bytes must hand out a copy
	if got := s.Bytes(); got[0] != 0xfe {
		t.Fatal("Bytes() exposed the prefix")
	}

	jobs := s.Sub("jobs", 3)
	wantPrefix := unhex(t, "fe71 026a6f627300 1503")
	if !bytes.Equal(jobs.Bytes(), wantPrefix) {
		t.Fatalf("Sub prefix % x, want % x", jobs.Bytes(), wantPrefix)
	}
	if !bytes.Equal(FromTuple(Tuple{"jobs", 3}).Bytes(), wantPrefix[2:]) {
		t.Fatal("FromTuple prefix differs from Pack")
	}

	key := jobs.Pack(Tuple{int64(42), testUUID})
	if want := append(bytes.Clone(wantPrefix), Tuple{int64(42), testUUID}.Pack()...); !bytes.Equal(key, want) {
		t.Fatalf("Pack = % x, want % x", key, want)
	}
	if !jobs.Contains(key) || !s.Contains(key) || !jobs.Contains(jobs.Bytes()) {
		t.Fatal("Contains rejected a key in the subspace")
	}
	if s.Sub("other").Contains(key) {
		t.Fatal("Contains accepted a key outside the subspace")
	}
	got, err := jobs.Unpack(key)
	if err != nil || !identical(got, Tuple{int64(42), testUUID}) {
		t.Fatalf("Unpack = %v, %v", got, err)
	}
	if got, err := s.Unpack(key); err != nil || !identical(got, Tuple{"jobs", int64(3), int64(42), testUUID}) {
		t.Fatalf("parent Unpack = %v, %v", got, err)
	}
	if got, err := jobs.Unpack(jobs.Bytes()); err != nil || len(got) != 0 {
		t.Fatalf("Unpack(prefix) = %v, %v", got, err)
	}

	begin, end := jobs.Range()
	if !bytes.Equal(begin, append(bytes.Clone(wantPrefix), 0x00)) || !bytes.Equal(end, append(bytes.Clone(wantPrefix), 0xff)) {
		t.Fatalf("Range = % x, % x", begin, end)
	}
	if bytes.Compare(begin, key) > 0 || bytes.Compare(key, end) >= 0 {
		t.Fatal("key outside Range")
	}

	if got := jobs.String(); got != `Subspace(rawPrefix=\xfeq\x02jobs\x00\x15\x03)` {
		t.Fatalf("String() = %s", got)
	}
}

func TestSubspaceUnpackErrors(t *testing.T) {
	s := NewSubspace([]byte("ab"))
	_, err := s.Unpack([]byte("ac\x14"))
	if !errors.Is(err, ErrNotInSubspace) {
		t.Fatalf("Unpack outside: %v", err)
	}
	_, err = s.Unpack([]byte("ab\x14\x15"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 3 {
		t.Fatalf("Unpack garbage: %v, want a *DecodeError at offset 3", err)
	}
}

func TestZeroSubspace(t *testing.T) {
	var s Subspace
	k := s.Pack(Tuple{"x"})
	if !bytes.Equal(k, Tuple{"x"}.Pack()) || !s.Contains(k) {
		t.Fatalf("zero subspace Pack = % x", k)
	}
	if b, e := s.Range(); !bytes.Equal(b, []byte{0}) || !bytes.Equal(e, []byte{0xff}) {
		t.Fatalf("zero subspace Range = % x, % x", b, e)
	}
}

func TestTupleRange(t *testing.T) {
	begin, end := Tuple{"a"}.Range()
	if !bytes.Equal(begin, unhex(t, "026100 00")) || !bytes.Equal(end, unhex(t, "026100 ff")) {
		t.Fatalf("Range = % x, % x", begin, end)
	}
	k := Tuple{"a", 1}.Pack()
	if bytes.Compare(begin, k) > 0 || bytes.Compare(k, end) >= 0 {
		t.Fatal("extension outside Range")
	}
}
