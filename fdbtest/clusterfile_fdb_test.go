//go:build fdb

package fdbtest

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// TestClusterFile: the file ClusterFile names opens the database Open
// returns: a write through one is read through the other.
func TestClusterFile(t *testing.T) {
	db, sub := Open(t)
	cf := ClusterFile(t)
	other, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := sub.Pack(nil)
	if err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(key, []byte("x"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []byte
	err = other.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		got, err = tr.Get(key).Get()
		return err
	})
	if err != nil || string(got) != "x" {
		t.Fatalf("read through %s: %q, %v", cf, got, err)
	}
}
