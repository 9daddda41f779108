package memkv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
)

// testEpoch is an arbitrary start for manual clocks.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestDB opens a database on a manual clock.
func newTestDB(t testing.TB) (*DB, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(testEpoch)
	db := Open(Options{Clock: clk})
	t.Cleanup(func() { _ = db.Close() })
	return db, clk
}

func begin(t testing.TB, db *DB) *txn {
	t.Helper()
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	return tr.(*txn)
}

// put commits key=value in its own transaction.
func put(t testing.TB, db *DB, key, value string) {
	t.Helper()
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(key), []byte(value))
		return nil
	})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
}

func mustGet(t testing.TB, r kv.ReadTransaction, key string) []byte {
	t.Helper()
	v, err := r.Get([]byte(key)).Get()
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return v
}

// read returns key's committed value, or "<nil>".
func read(t testing.TB, db *DB, key string) string {
	t.Helper()
	var out string
	err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte(key)).Get()
		if v == nil {
			out = "<nil>"
		} else {
			out = string(v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustCommit(t testing.TB, tr kv.Transaction) {
	t.Helper()
	if err := tr.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func wantCode(t testing.TB, err error, code int) {
	t.Helper()
	if kv.Code(err) != code {
		t.Fatalf("got error %v, want code %d", err, code)
	}
}

func rng(b, e string) kv.KeyRange { return kv.KeyRange{Begin: []byte(b), End: []byte(e)} }

func keysOf(kvs []kv.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, p := range kvs {
		out[i] = string(p.Key)
	}
	return out
}

func isCode(err error, code int) bool {
	var e kv.Error
	return errors.As(err, &e) && e.Code == code
}
