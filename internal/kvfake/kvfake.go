// Package kvfake holds small kv engines that misbehave in one exact way,
// for tests of the code that must survive it (kv's retry loop, the queue's
// recovery from unknown commit results). kv.WithFaults draws faults at
// random; these place one where a test needs it.
package kvfake

import "github.com/quickfdb/quickfdb/kv"

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
