// Package kvfake holds small kv engines that misbehave in one exact way,
// for tests of the code that must survive it (kv's retry loop, the queue's
// recovery from unknown commit results). kv.WithFaults draws faults at
// random; these place one where a test needs it.
package kvfake

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/quickfdb/quickfdb/kv"
)

// TimeoutAfterApply is an engine whose first commit applies and then times
// out, as a commit does when the operation's own timeout strikes while it
// is in flight; like an engine that forgets why, its OnError then answers
// with the bare code. Later commits behave. Not safe for concurrent use.
type TimeoutAfterApply struct {
	kv.Database
	// Commits counts the commit attempts made so far.
	Commits int
}

// CreateTransaction implements kv.Database.
func (d *TimeoutAfterApply) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &timeoutTx{Transaction: tr, db: d}, nil
}

type timeoutTx struct {
	kv.Transaction
	db *TimeoutAfterApply
}

func (t *timeoutTx) Commit() error {
	t.db.Commits++
	if err := t.Transaction.Commit(); err != nil || t.db.Commits > 1 {
		return err
	}
	return kv.Error{Code: 1031, DuringCommit: true}
}

func (t *timeoutTx) OnError(err error) error {
	if kv.Code(err) == 1031 {
		return kv.ErrTransactionTimedOut
	}
	return t.Transaction.OnError(err)
}

// FailWrite fails, once armed, the next commit of a transaction that set
// the key Target, with Err struck in flight and NOT applied, and OnError
// then answers the bare code, as FDB's does for 1031 and 1025 (it retries
// neither). Arm it from the code under test just before the transaction.
type FailWrite struct {
	kv.Database
	Target []byte
	Err    kv.Error // e.g. kv.Error{Code: 1031, DuringCommit: true}

	armed atomic.Bool
	// Failed counts the commits failed.
	Failed atomic.Int64
}

// Arm makes the next commit that set Target fail.
func (d *FailWrite) Arm() { d.armed.Store(true) }

// CreateTransaction implements kv.Database.
func (d *FailWrite) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &failWriteTx{Transaction: tr, db: d}, nil
}

// Transact implements kv.Database over the failing transactions.
func (d *FailWrite) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type failWriteTx struct {
	kv.Transaction
	db  *FailWrite
	hit bool
}

func (t *failWriteTx) Set(k, v []byte) {
	if bytes.Equal(k, t.db.Target) {
		t.hit = true
	}
	t.Transaction.Set(k, v)
}

func (t *failWriteTx) Commit() error {
	if t.hit && t.db.armed.CompareAndSwap(true, false) {
		t.db.Failed.Add(1)
		return t.db.Err
	}
	return t.Transaction.Commit()
}

func (t *failWriteTx) OnError(err error) error {
	t.hit = false
	if c := kv.Code(err); c == t.db.Err.Code && c != 0 {
		return kv.Error{Code: c}
	}
	return t.Transaction.OnError(err)
}
