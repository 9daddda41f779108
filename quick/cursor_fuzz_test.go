package quick

import (
	"errors"
	"testing"
)

// FuzzCursor: decoding any string either fails with ErrInvalidCursor or
// yields a key under the listing's prefix, and a made cursor decodes back.
func FuzzCursor(f *testing.F) {
	prefix := []byte("\x15\x01\x02s\x00\x02email\x00")
	f.Add(string(makeCursor(cursorList, "email", prefix, append(append([]byte(nil), prefix...), 1, 2, 3))), "email")
	f.Add(string(makeCursor(cursorDead, "email", prefix, prefix)), "sms")
	f.Add("AQ", "")
	f.Add("%%", "email")
	f.Fuzz(func(t *testing.T, s, taskType string) {
		k, err := Cursor(s).key(cursorList, taskType, prefix)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("error %v does not wrap ErrInvalidCursor", err)
			}
			return
		}
		if s != "" && string(k[:len(prefix)]) != string(prefix) {
			t.Fatalf("key %x outside the prefix", k)
		}
		if s != "" {
			back, err := makeCursor(cursorList, taskType, prefix, k).key(cursorList, taskType, prefix)
			if err != nil || string(back) != string(k) {
				t.Fatalf("round trip: %x -> %x, %v", k, back, err)
			}
		}
	})
}
