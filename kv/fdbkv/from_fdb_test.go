//go:build fdb

package fdbkv_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// An application on the official binding opens a queue on its own
// fdb.Database in one call and enqueues in its own fdb.Transaction; values
// that are not the binding's are refused with ErrNotFDB.
func TestFromOnTheApplicationsOwnDatabase(t *testing.T) {
	_, raw, sub := open(t)
	ctx := context.Background()
	q, err := quick.Open(ctx, fdbkv.FromDatabase(raw), sub.Sub("queue"), quick.Options{})
	if err != nil {
		t.Fatalf("quick.Open(FromDatabase): %v", err)
	}
	if _, err := quick.Open(ctx, fdbkv.FromDatabase(&raw), sub.Sub("queue"), quick.Options{}); err != nil {
		t.Fatalf("quick.Open(FromDatabase(pointer)): %v", err)
	}
	own := sub.Pack(tuple.Tuple{"own"})
	_, err = raw.Transact(func(tr fdb.Transaction) (any, error) {
		tr.Set(fdb.Key(own), []byte("1"))
		ktr, err := fdbkv.FromTransaction(tr)
		if err != nil {
			return nil, err
		}
		_, err = q.EnqueueTx(ktr, quick.NewJob{TaskType: "from"})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.ReadTransact(func(rt fdb.ReadTransaction) (any, error) {
		krt, err := fdbkv.FromReadTransaction(rt)
		if err != nil {
			return nil, err
		}
		v, err := krt.Get(own).Get()
		if err == nil && string(v) != "1" {
			t.Errorf("read through FromReadTransaction: %q", v)
		}
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quick.Open(ctx, fdbkv.FromDatabase("not a database"), sub, quick.Options{}); !errors.Is(err, fdbkv.ErrNotFDB) {
		t.Fatalf("FromDatabase(string): %v, want ErrNotFDB", err)
	}
	var nilTr *fdb.Transaction
	if _, err := fdbkv.FromTransaction(nilTr); !errors.Is(err, fdbkv.ErrNotFDB) {
		t.Fatalf("FromTransaction(nil pointer): %v, want ErrNotFDB", err)
	}
	if _, err := fdbkv.FromReadTransaction(nilTr); !errors.Is(err, fdbkv.ErrNotFDB) {
		t.Fatalf("FromReadTransaction(nil pointer): %v, want ErrNotFDB", err)
	}
}
