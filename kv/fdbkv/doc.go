// Package fdbkv is quickfdb's storage adapter for FoundationDB: it implements
// the kv contract over FoundationDB's official Go binding
// (github.com/apple/foundationdb/bindings/go, API version 730, FDB 7.3).
//
// # Building
//
// The binding is a cgo package that needs FoundationDB's client library
// (libfdb_c 7.3) and its headers (foundationdb/fdb_c.h). So that the rest of
// quickfdb builds and tests everywhere, the adapter is compiled only with the
// build tag fdb:
//
//	go test -tags fdb ./...
//
// Without the tag the package still builds, with the same Open,
// OpenDirectory, FromDatabase, FromTransaction and FromReadTransaction
// functions, but they fail with an error wrapping ErrNotBuilt (which says to
// build with -tags fdb), and Built is false. New, Wrap, WrapRead and FDB,
// which name binding types, exist only with the tag.
//
// # Usage
//
//	db, err := fdbkv.Open("") // "" is the default cluster file
//	if err != nil { ... }
//	err = db.Transact(ctx, func(tr kv.Transaction) error { ... })
//
// Open selects API version 730 unless the process already selected one (it
// then keeps it; versions below MinAPIVersion are refused). An application
// that already has an fdb.Database opens a queue on it with FromDatabase;
// one that wants to enqueue jobs inside its own transaction adapts that
// transaction with FromTransaction (or a read-only one with
// FromReadTransaction) and passes the result to quickfdb, then commits it
// itself:
//
//	q, err := quick.Open(ctx, fdbkv.FromDatabase(fdbDB), space, quick.Options{})
//	...
//	_, err = fdbDB.Transact(func(tr fdb.Transaction) (any, error) {
//		tr.Set(myKey, myValue)
//		ktr, err := fdbkv.FromTransaction(tr)
//		if err != nil {
//			return nil, err // ErrNotBuilt without -tags fdb
//		}
//		_, err = q.EnqueueTx(ktr, job) // same commit
//		return nil, err
//	})
//
// The From functions take any so that this code compiles with or without
// the fdb tag; with the tag they are New, Wrap and WrapRead.
//
// OpenDirectory resolves a path with FoundationDB's directory layer and
// returns its key prefix, for placing a queue in a directory.
//
// # Semantics
//
// Transact and ReadTransact run the shared retry loop kv.Retry / kv.RetryRead,
// so context cancellation, OnError and error values behave exactly as on the
// embedded engine kv/memkv. Every fdb.Error is converted to an error carrying
// a kv.Error with the same code (test it with errors.Is against the kv
// sentinels, or errors.As). That error also answers errors.As into an
// fdb.Error, so an error met through a Wrap'd transaction and returned to the
// binding's own retry loop (fdb.Database.Transact) is retried by it. A commit that fails with 1025 (transaction_cancelled) or 1031
// (transaction_timed_out) is reported with DuringCommit set unless the
// adapter knows the cancellation or timeout struck before the commit was sent
// (the transaction was cancelled through this adapter, or the timeout set
// through its Options had elapsed); when in doubt it says "maybe committed",
// the safe answer.
//
// Options set through Options are set again after Reset and after an OnError
// that resets the transaction, as the kv contract keeps them: FDB keeps only
// the options fdb.options marks persistent (timeout, retry limit, max retry
// delay) and would drop tags, batch priority and automatic idempotency.
//
// Range reads issue their first batch at once (so that several can be in
// flight), in StreamingModeExact when a limit is set and
// StreamingModeIterator otherwise; GetSliceWithError then fetches the rest as
// the binding does (WantAll / Exact).
//
// A Watch's Wait that returns because its context is done leaves the watch
// armed: Wait may be called again. A watch that is no longer wanted must be
// cancelled (Cancel), as FDB asks, or it holds one of the database's watches
// (10,000 by default) and a goroutine until the key changes.
//
// # Tests
//
// The conformance suite kv/kvtest runs against a real cluster with
//
//	go test -tags fdb ./kv/fdbkv/
//
// using package fdbtest to find or start one (see there: FDB_CLUSTER_FILE,
// QUICKFDB_FDB_BIN).
package fdbkv
