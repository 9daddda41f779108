//go:build !fdb

package fdbkv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

func TestStubReportsNotBuilt(t *testing.T) {
	if fdbkv.Built {
		t.Fatal("Built is true in the untagged build")
	}
	db, err := fdbkv.Open("")
	if db != nil || !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("Open: got (%v, %v), want (nil, an error wrapping ErrNotBuilt)", db, err)
	}
	for _, want := range []string{"libfdb_c 7.3", "-tags fdb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open's error %q does not mention %q", err, want)
		}
	}
	prefix, err := fdbkv.OpenDirectory(nil, []string{"app", "queue"})
	if prefix != nil || !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("OpenDirectory: got (%x, %v), want (nil, an error wrapping ErrNotBuilt)", prefix, err)
	}
}
