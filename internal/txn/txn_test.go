package txn_test

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// timeoutAfterApply is an engine whose first commit applies and then times
// out, as a commit does when the operation's own timeout strikes while it is
// in flight; like an engine that forgets why, its OnError then answers with
// the bare code.
type timeoutAfterApply struct {
	kv.Database
	commits int
}

func (d *timeoutAfterApply) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &timeoutTx{Transaction: tr, db: d}, nil
}

type timeoutTx struct {
	kv.Transaction
	db *timeoutAfterApply
}

func (t *timeoutTx) Commit() error {
	t.db.commits++
	if err := t.Transaction.Commit(); err != nil || t.db.commits > 1 {
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

// TransactWatched carries on in a new transaction after its own timeout
// struck a commit in flight, telling fn an earlier attempt may have
// committed, so the operation finds its own commit instead of failing.
func TestTransactWatchedRecoversFromTimeoutDuringCommit(t *testing.T) {
	db := &timeoutAfterApply{Database: memkv.Open(memkv.Options{})}
	var seen []bool
	err := txn.TransactWatched(context.Background(), db, func(tr kv.Transaction, maybe bool) error {
		seen = append(seen, maybe)
		v, err := tr.Get([]byte("k")).Get()
		if err != nil {
			return err
		}
		if maybe && v != nil {
			return nil // our own earlier commit
		}
		tr.Set([]byte("k"), []byte("v"))
		return nil
	})
	if err != nil {
		t.Fatalf("TransactWatched = %v", err)
	}
	if len(seen) != 2 || seen[0] || !seen[1] {
		t.Fatalf("fn saw maybeCommitted %v, want [false true]", seen)
	}
}
