package cron

import (
	"context"

	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
)

// transact runs fn in db's retry loop, telling it whether an earlier
// attempt may have committed (its commit ended in commit_unknown_result), so
// that an operation can recognise its own earlier commit on a retry. The
// same pattern as quick's.
func transact(ctx context.Context, db kv.Database, fn func(tr kv.Transaction, maybeCommitted bool) error) error {
	return txn.TransactWatched(ctx, db, fn)
}
