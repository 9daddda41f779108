package txn_test

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/internal/kvfake"
	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// TransactWatched carries on in a new transaction after its own timeout
// struck a commit in flight, telling fn an earlier attempt may have
// committed, so the operation finds its own commit instead of failing.
func TestTransactWatchedRecoversFromTimeoutDuringCommit(t *testing.T) {
	db := &kvfake.TimeoutAfterApply{Database: memkv.Open(memkv.Options{})}
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
