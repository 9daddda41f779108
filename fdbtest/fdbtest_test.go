package fdbtest_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

func TestMain(m *testing.M) { fdbtest.Main(m) }

func write(t *testing.T, db kv.Database, pairs ...[]byte) {
	t.Helper()
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := 0; i+1 < len(pairs); i += 2 {
			tr.Set(pairs[i], pairs[i+1])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("writing: %v", err)
	}
}

func readPrefix(t *testing.T, db kv.Database, prefix []byte) []kv.KeyValue {
	t.Helper()
	var kvs []kv.KeyValue
	err := db.ReadTransact(context.Background(), func(rt kv.ReadTransaction) error {
		var err error
		kvs, err = rt.GetRange(kv.PrefixRange(prefix), kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		t.Fatalf("reading %x: %v", prefix, err)
	}
	return kvs
}

// checkFreshSubspace checks that sub is empty, distinct from other, and that
// writes through sub land under its prefix; it writes three keys, one of them
// outside the tuple range (prefix+0xff), which cleanup must clear too.
func checkFreshSubspace(t *testing.T, db kv.Database, sub, other tuple.Subspace) {
	t.Helper()
	if len(sub.Bytes()) == 0 {
		t.Fatal("empty subspace prefix")
	}
	if bytes.HasPrefix(sub.Bytes(), other.Bytes()) || bytes.HasPrefix(other.Bytes(), sub.Bytes()) {
		t.Fatalf("subspaces overlap: %x and %x", sub.Bytes(), other.Bytes())
	}
	if kvs := readPrefix(t, db, sub.Bytes()); len(kvs) != 0 {
		t.Fatalf("new subspace holds %d keys", len(kvs))
	}
	raw := append(sub.Bytes(), 0xff, 'x')
	write(t, db, sub.Pack(tuple.Tuple{"a"}), []byte("1"), sub.Pack(tuple.Tuple{"b"}), []byte("2"), raw, []byte("3"))
	kvs := readPrefix(t, db, sub.Bytes())
	if len(kvs) != 3 {
		t.Fatalf("after writing 3 keys the subspace holds %d", len(kvs))
	}
	for _, p := range kvs {
		if !sub.Contains(p.Key) {
			t.Fatalf("key %x is outside the subspace %x", p.Key, sub.Bytes())
		}
	}
}

func TestOpenGivesAFreshSubspaceClearedAtCleanup(t *testing.T) {
	var (
		db         kv.Database
		sub, other tuple.Subspace
	)
	t.Run("test", func(t *testing.T) {
		db, sub = fdbtest.Open(t)
		_, other = fdbtest.Open(t)
		checkFreshSubspace(t, db, sub, other)
		write(t, db, other.Pack(tuple.Tuple{"other"}), []byte("o"))
	})
	if db == nil {
		t.Skip("the subtest did not get a database")
	}
	if kvs := readPrefix(t, db, sub.Bytes()); len(kvs) != 0 {
		t.Fatalf("after the test ended its subspace still holds %d keys", len(kvs))
	}
	if kvs := readPrefix(t, db, other.Bytes()); len(kvs) != 0 {
		t.Fatalf("after the test ended the second subspace still holds %d keys", len(kvs))
	}
}

func TestOpenCleanupLeavesOtherKeys(t *testing.T) {
	db, keep := fdbtest.Open(t) // outlives the subtest's subspace
	k := keep.Pack(tuple.Tuple{"keep"})
	write(t, db, k, []byte("k"))
	t.Run("test", func(t *testing.T) {
		db2, sub := fdbtest.Open(t)
		write(t, db2, sub.Pack(tuple.Tuple{"gone"}), []byte("g"))
	})
	if kvs := readPrefix(t, db, keep.Bytes()); len(kvs) != 1 {
		t.Fatalf("another test's cleanup touched this test's subspace: %d keys, want 1", len(kvs))
	}
}

func TestOpenMem(t *testing.T) {
	var db *memkv.DB
	var sub tuple.Subspace
	t.Run("test", func(t *testing.T) {
		var other tuple.Subspace
		db, sub = fdbtest.OpenMem(t, memkv.Options{})
		_, other = fdbtest.OpenMem(t, memkv.Options{})
		checkFreshSubspace(t, db, sub, other)
	})
	if db == nil {
		t.Fatal("OpenMem returned no database")
	}
	// The database was closed at cleanup (after its subspace was cleared).
	if _, err := db.CreateTransaction(); err == nil {
		t.Fatal("OpenMem's database still creates transactions after the test ended")
	}
}
