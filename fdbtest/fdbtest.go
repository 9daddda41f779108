package fdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Open returns the test database (memkv by default, FoundationDB with the
// fdb build tag: see the package documentation) and a fresh subspace of it
// that is cleared when t ends. It skips t when the fdb-tagged build finds no
// FoundationDB, and fails t when FDB_CLUSTER_FILE names a cluster that does
// not answer.
func Open(t testing.TB) (kv.Database, tuple.Subspace) {
	t.Helper()
	db := openDB(t)
	return db, newSubspace(t, db)
}

// OpenMem returns a private memkv database built with opts, whatever the
// build tags, and a fresh subspace of it. The subspace is cleared and the
// database closed when t ends.
func OpenMem(t testing.TB, opts memkv.Options) (*memkv.DB, tuple.Subspace) {
	t.Helper()
	db := memkv.Open(opts)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("fdbtest: closing memkv: %v", err)
		}
	})
	// Registered after Close, so it runs before it.
	return db, newSubspace(t, db)
}

// Main runs the tests and then releases what the package started: the
// throwaway fdbserver (and its temporary directory) or the shared memkv
// database. Call it from TestMain:
//
//	func TestMain(m *testing.M) { fdbtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	shutdown()
	os.Exit(code)
}

// ClearTimeout bounds the cleanup transaction that clears a test's subspace.
const ClearTimeout = 30 * time.Second

func newSubspace(t testing.TB, db kv.Database) tuple.Subspace {
	t.Helper()
	sub := tuple.FromTuple(tuple.Tuple{"fdbtest", randomID()})
	r := kv.PrefixRange(sub.Bytes())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ClearTimeout)
		defer cancel()
		err := db.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(r)
			return nil
		})
		if err != nil {
			t.Errorf("fdbtest: clearing the test subspace %x: %v", sub.Bytes(), err)
		}
	})
	return sub
}

// randomID is 16 hex digits from crypto/rand: 64 bits, so subspaces of
// concurrent test runs on one cluster do not collide.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}
