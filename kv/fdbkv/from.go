package fdbkv

import (
	"context"
	"errors"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// ErrNotFDB is returned (wrapped) by FromDatabase, FromTransaction and
// FromReadTransaction when given a value that is not the FoundationDB
// binding's database or transaction.
var ErrNotFDB = errors.New("fdbkv: not a FoundationDB binding value")

// FromDatabase adapts the application's own fdb.Database (or
// *fdb.Database) to a kv.Database, for opening a queue on it in one call:
//
//	q, err := quick.Open(ctx, fdbkv.FromDatabase(fdbDB), space, quick.Options{})
//
// It takes any so that the call compiles whether or not this package was
// built with the fdb tag. In a build without it, or given anything but an
// fdb.Database, it returns a database whose every operation fails with an
// error wrapping ErrNotBuilt (which says to build with -tags fdb) or
// ErrNotFDB: quick.Open then fails at once with that error. It does not
// touch the API version (the application selected one to open fdbDB).
func FromDatabase(db any) kv.Database {
	d, err := fromDatabase(db)
	if err != nil {
		return failedDatabase{fmt.Errorf("fdbkv: FromDatabase(%T): %w", db, err)}
	}
	return d
}

// FromTransaction adapts the application's own fdb.Transaction (or
// *fdb.Transaction) to a kv.Transaction, so that quickfdb's operations (an
// enqueue, say) join it and commit or fail with it; the caller keeps
// owning it: it commits it, and its retry loop retries it. It takes any so
// that the call compiles whether or not this package was built with the fdb
// tag; without the tag the error wraps ErrNotBuilt and says to build with
// -tags fdb, and a value that is no fdb.Transaction gets ErrNotFDB.
func FromTransaction(tr any) (kv.Transaction, error) {
	t, err := fromTransaction(tr)
	if err != nil {
		return nil, fmt.Errorf("fdbkv: FromTransaction(%T): %w", tr, err)
	}
	return t, nil
}

// FromReadTransaction adapts the application's own fdb.ReadTransaction (an
// fdb.Transaction or an fdb.Snapshot) to a kv.ReadTransaction, for
// quickfdb's read-only operations. Errors as FromTransaction's.
func FromReadTransaction(rt any) (kv.ReadTransaction, error) {
	r, err := fromReadTransaction(rt)
	if err != nil {
		return nil, fmt.Errorf("fdbkv: FromReadTransaction(%T): %w", rt, err)
	}
	return r, nil
}

// failedDatabase is FromDatabase's answer to a value it cannot adapt:
// every operation fails with err, so the first use (quick.Open) reports it.
type failedDatabase struct{ err error }

func (f failedDatabase) CreateTransaction() (kv.Transaction, error) { return nil, f.err }

func (f failedDatabase) Transact(context.Context, func(kv.Transaction) error) error {
	return f.err
}

func (f failedDatabase) ReadTransact(context.Context, func(kv.ReadTransaction) error) error {
	return f.err
}
