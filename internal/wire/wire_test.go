package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestRoundTripAndSkipEmpty(t *testing.T) {
	var b []byte
	b = AppendVarint(b, 1, 0) // skipped
	b = AppendVarint(b, 2, 300)
	b = AppendString(b, 3, "")
	b = AppendString(b, 4, "hi")
	b = AppendBytes(b, 5, []byte{1, 2})
	b = protowire.AppendTag(b, 6, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	got := map[protowire.Number]any{}
	err := Walk(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		if raw != nil {
			got[num] = string(raw)
		} else {
			got[num] = x
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[protowire.Number]any{2: uint64(300), 4: "hi", 5: "\x01\x02", 6: uint64(7)}
	if len(got) != len(want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("field %d = %v, want %v", k, got[k], v)
		}
	}
}

func FuzzWalk(f *testing.F) {
	f.Add([]byte{0x10, 0xac, 0x02})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Walk(b, func(protowire.Number, protowire.Type, []byte, uint64) error { return nil })
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}
