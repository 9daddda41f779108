//go:build !fdb

package fdbkv_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
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

// Without the fdb tag the FDB entry points still compile, and fail with
// an error that says to build with -tags fdb: opening a queue on an
// application's fdb.Database fails at quick.Open, the one call it takes.
func TestFromWithoutTagExplainsTheTag(t *testing.T) {
	type fdbDatabase struct{} // stands for fdb.Database, which needs cgo
	db := fdbkv.FromDatabase(fdbDatabase{})
	if db == nil {
		t.Fatal("FromDatabase returned nil")
	}
	_, err := quick.Open(context.Background(), db, tuple.FromTuple(tuple.Tuple{"app", "jobs"}), quick.Options{})
	if !errors.Is(err, fdbkv.ErrNotBuilt) || !strings.Contains(err.Error(), "-tags fdb") {
		t.Fatalf("quick.Open on FromDatabase: %v, want ErrNotBuilt saying -tags fdb", err)
	}
	if err := db.Transact(context.Background(), func(kv.Transaction) error { t.Fatal("ran"); return nil }); !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("Transact: %v", err)
	}
	if err := db.ReadTransact(context.Background(), func(kv.ReadTransaction) error { t.Fatal("ran"); return nil }); !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("ReadTransact: %v", err)
	}
	if tr, err := db.CreateTransaction(); tr != nil || !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("CreateTransaction: %v %v", tr, err)
	}
	if tr, err := fdbkv.FromTransaction(struct{}{}); tr != nil || !errors.Is(err, fdbkv.ErrNotBuilt) || !strings.Contains(err.Error(), "-tags fdb") {
		t.Fatalf("FromTransaction: %v %v", tr, err)
	}
	if rt, err := fdbkv.FromReadTransaction(nil); rt != nil || !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("FromReadTransaction: %v %v", rt, err)
	}
}
