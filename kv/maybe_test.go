package kv_test

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/internal/kvfake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// A retry loop that ends on a timeout after a commit applied reports the
// outcome as unknown, even when the engine's OnError drops DuringCommit.
func TestRetryKeepsMaybeCommittedThroughOnError(t *testing.T) {
	db := &kvfake.TimeoutAfterApply{Database: memkv.Open(memkv.Options{})}
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	err = kv.Retry(context.Background(), tr, func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	})
	if kv.Code(err) != 1031 || !kv.IsMaybeCommitted(err) {
		t.Fatalf("Retry = %v (maybe-committed %v), want a maybe-committed 1031", err, kv.IsMaybeCommitted(err))
	}
}

// An earlier attempt that may have committed makes the loop's final error
// maybe-committed, whatever ends the loop.
func TestRetryRemembersAnEarlierUnknownResult(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	tr, err := raw.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err = kv.Retry(context.Background(), tr, func(tr kv.Transaction) error {
		attempts++
		if attempts == 1 {
			return kv.ErrCommitUnknownResult
		}
		return kv.ErrTransactionTimedOut // a read timing out on the retry
	})
	if !kv.IsMaybeCommitted(err) || kv.Code(err) != 1031 {
		t.Fatalf("Retry = %v, want a maybe-committed 1031", err)
	}
}
