package kv

import (
	"context"
	"errors"
	"fmt"
)

// Retry runs fn on tr and commits, with FDB's retry loop: an error carrying an
// FDB code goes to tr.OnError, which backs off and resets the transaction for
// another try or returns the error when it may not be retried. Any other
// error from fn is returned as it is, without a retry. It is the loop behind
// every engine's Transact, the same as the Go binding's.
//
// The transaction is cancelled when ctx is done; the error returned then
// wraps both ctx.Err() and the FDB error, so errors.Is works for either.
func Retry(ctx context.Context, tr Transaction, fn func(Transaction) error) error {
	return loop(ctx, tr, func() error {
		if err := fn(tr); err != nil {
			return err
		}
		return tr.Commit()
	})
}

// RetryRead runs fn on tr with FDB's retry loop, without committing.
func RetryRead(ctx context.Context, tr Transaction, fn func(ReadTransaction) error) error {
	return loop(ctx, tr, func() error { return fn(tr) })
}

func loop(ctx context.Context, tr Transaction, attempt func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, tr.Cancel)
	defer stop()
	for {
		err := attempt()
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w: %w", cerr, err)
		}
		var fe Error
		if !errors.As(err, &fe) {
			return err
		}
		if rerr := tr.OnError(err); rerr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("%w: %w", cerr, rerr)
			}
			return rerr
		}
	}
}

// CommitWatcher wraps a transaction to remember whether a commit ended with a
// maybe-committed error, so a function run by Retry can tell that an earlier
// attempt may have applied and check for its own outcome before acting
// again.
type CommitWatcher struct {
	Transaction
	unknown bool
}

// WatchCommits wraps tr in a CommitWatcher.
func WatchCommits(tr Transaction) *CommitWatcher { return &CommitWatcher{Transaction: tr} }

// Commit implements Transaction.
func (c *CommitWatcher) Commit() error {
	err := c.Transaction.Commit()
	if IsMaybeCommitted(err) {
		c.unknown = true
	}
	return err
}

// MaybeCommitted reports whether an earlier commit may have applied.
func (c *CommitWatcher) MaybeCommitted() bool { return c.unknown }

// TransactWatched runs fn in a transaction of db with the retry loop, as
// Transact does, telling fn whether an earlier attempt may have committed
// (its commit ended in commit_unknown_result). An operation that fixes its
// intended outcome outside the loop can then check for it on a retry instead
// of applying itself twice.
func TransactWatched(ctx context.Context, db Database, fn func(tr Transaction, maybeCommitted bool) error) error {
	tr, err := db.CreateTransaction()
	if err != nil {
		return err
	}
	w := WatchCommits(tr)
	return Retry(ctx, w, func(Transaction) error { return fn(w, w.MaybeCommitted()) })
}
