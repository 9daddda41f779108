//go:build fdb

package fdbkv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/apple/foundationdb/bindings/go/src/fdb/directory"

	"github.com/quickfdb/quickfdb/kv"
)

// Built reports whether the package was compiled with the fdb build tag, that
// is with the real adapter. In this build it is true.
const Built = true

// openMu serializes Open: the binding's OpenDatabase keeps its cache of
// databases in a map without a lock.
var openMu sync.Mutex

// Open opens the FoundationDB database named by clusterFile ("" for the
// default cluster file, fdb.DefaultClusterFile). It selects API version
// APIVersion (730) if the process has not selected one yet; a version selected
// earlier is kept if it is at least MinAPIVersion.
//
// Like the binding's OpenDatabase it does not contact the cluster: an
// unreachable cluster shows as reads that block (bound them with
// Options().SetTimeout). Databases are cached per cluster file by the
// binding, so opening the same file twice shares one connection.
func Open(clusterFile string) (kv.Database, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if !fdb.IsAPIVersionSelected() {
		if err := fdb.APIVersion(APIVersion); err != nil {
			return nil, fmt.Errorf("fdbkv: select API version %d: %w", APIVersion, convertErr(err))
		}
	}
	v, err := fdb.GetAPIVersion()
	if err != nil {
		return nil, fmt.Errorf("fdbkv: API version: %w", convertErr(err))
	}
	if v < MinAPIVersion {
		return nil, fmt.Errorf("fdbkv: the process selected FoundationDB API version %d; fdbkv needs at least %d", v, MinAPIVersion)
	}
	db, err := fdb.OpenDatabase(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdbkv: open database (cluster file %q): %w", clusterFile, convertErr(err))
	}
	return New(db), nil
}

// New wraps a database the application opened itself. It does not touch the
// API version.
func New(db fdb.Database) kv.Database {
	return &database{db: db}
}

// Wrap wraps the caller's own transaction, so that quickfdb's operations (an
// enqueue, say) join it and commit or fail with it. The caller keeps owning
// tr: it commits it, and its retry loop (fdb.Database.Transact) retries it.
// The kv.Transaction returned is a view of tr; Commit, OnError, Reset and
// Cancel act on tr itself.
func Wrap(tr fdb.Transaction) kv.Transaction {
	return newTransaction(tr)
}

// WrapRead wraps the caller's read transaction (an fdb.Transaction or an
// fdb.Snapshot) for quickfdb's read-only operations.
func WrapRead(rt fdb.ReadTransaction) kv.ReadTransaction {
	return readView{rt: rt}
}

// OpenDirectory resolves path with FoundationDB's directory layer (the
// default root directory, directory.CreateOrOpen: created if missing, with no
// layer) and returns the directory's key prefix.
//
// db must be a database of this package (from Open or New), possibly wrapped
// by kv.WithCounters or kv.WithFaults (anything with an Unwrap() kv.Database
// method is unwrapped); any other engine has no directory layer and gets an
// error.
func OpenDirectory(db kv.Database, path []string) ([]byte, error) {
	fd, ok := unwrapDB(db)
	if !ok {
		return nil, fmt.Errorf("fdbkv: open directory %q: %T is not a FoundationDB database of package fdbkv (the directory layer needs FoundationDB)", path, db)
	}
	tr, err := fd.db.CreateTransaction()
	if err != nil {
		return nil, fmt.Errorf("fdbkv: open directory %q: %w", path, convertErr(err))
	}
	var prefix []byte
	err = kv.Retry(context.Background(), newTransaction(tr), func(kv.Transaction) error {
		ds, err := directory.CreateOrOpen(tr, path, nil)
		if err != nil {
			return convertErr(err)
		}
		prefix = append([]byte(nil), ds.Bytes()...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fdbkv: open directory %q: %w", path, err)
	}
	return prefix, nil
}

// FDB returns the fdb.Database under db when db is a database of this
// package (from Open or New), possibly wrapped by kv.WithCounters or
// kv.WithFaults, so that code holding a kv.Database can use FoundationDB's
// own layers on the same connection.
func FDB(db kv.Database) (fdb.Database, bool) {
	d, ok := unwrapDB(db)
	if !ok {
		return fdb.Database{}, false
	}
	return d.db, true
}

func unwrapDB(db kv.Database) (*database, bool) {
	for db != nil {
		if d, ok := db.(*database); ok {
			return d, true
		}
		u, ok := db.(interface{ Unwrap() kv.Database })
		if !ok {
			return nil, false
		}
		db = u.Unwrap()
	}
	return nil, false
}

// database implements kv.Database over an fdb.Database.
type database struct {
	db fdb.Database
}

func (d *database) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.db.CreateTransaction()
	if err != nil {
		return nil, convertErr(err)
	}
	return newTransaction(tr), nil
}

// Transact runs fn with kv.Retry, the loop every engine shares.
func (d *database) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

// ReadTransact runs fn with kv.RetryRead, the loop every engine shares.
func (d *database) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

// convertErr turns an fdb.Error into the adapter's error for its code (see
// codeError). An error that wraps an fdb.Error (the directory layer may)
// keeps its message and chain, with the kv.Error added to the chain; other
// errors pass through.
func convertErr(err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(fdb.Error); ok {
		return codeError{kv.Error{Code: fe.Code}}
	}
	var fe fdb.Error
	if errors.As(err, &fe) {
		return &convertedError{err: err, kerr: kv.Error{Code: fe.Code}}
	}
	return err
}

// codeError is the error the adapter returns for an FDB error code. It
// wraps the kv.Error (errors.Is against the kv sentinels and errors.As into
// a kv.Error work, as on every engine), and it also answers errors.As into
// an fdb.Error with the same code. So an error from a Wrap'd transaction,
// returned by the caller's function to the binding's own retry loop
// (fdb.Database.Transact), is retried by it like the binding's own errors.
type codeError struct{ kerr kv.Error }

func (e codeError) Error() string { return e.kerr.Error() }
func (e codeError) Unwrap() error { return e.kerr }

// As fills an *fdb.Error with the code.
func (e codeError) As(target any) bool {
	if p, ok := target.(*fdb.Error); ok {
		*p = fdb.Error{Code: e.kerr.Code}
		return true
	}
	return false
}

// convertedError is an error chain holding an fdb.Error, with the matching
// kv.Error joined to it so that errors.As and errors.Is find the kv code.
type convertedError struct {
	err  error
	kerr kv.Error
}

func (e *convertedError) Error() string   { return e.err.Error() }
func (e *convertedError) Unwrap() []error { return []error{e.kerr, e.err} }
