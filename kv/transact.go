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
//
// If any attempt may have committed (IsMaybeCommitted of its error: 1021,
// 1039, or a timeout or cancellation during its commit), the error that ends
// the loop is maybe-committed too, whatever it is: a timeout that struck the
// commit in flight comes back from OnError as a bare 1031 on some engines,
// and a retry after 1021 may time out at its first read.
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
	maybe := false
	for {
		err := attempt()
		if err == nil {
			return nil
		}
		maybe = maybe || IsMaybeCommitted(err)
		if cerr := ctx.Err(); cerr != nil {
			return maybeCommitted(fmt.Errorf("%w: %w", cerr, err), maybe)
		}
		var fe Error
		if !errors.As(err, &fe) {
			return maybeCommitted(err, maybe)
		}
		if rerr := tr.OnError(err); rerr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return maybeCommitted(fmt.Errorf("%w: %w", cerr, rerr), maybe)
			}
			return maybeCommitted(rerr, maybe)
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

// maxRecoveries bounds the fresh transactions TransactWatched starts after a
// retry loop ended with its outcome unknown.
const maxRecoveries = 10

// TransactWatched runs fn in a transaction of db with the retry loop, as
// Transact does, telling fn whether an earlier attempt may have committed
// (its commit ended in commit_unknown_result, or a timeout or cancellation
// struck it in flight). An operation that fixes its intended outcome outside
// the loop can then check for it on a retry instead of applying itself
// twice.
//
// A loop that ends on an FDB error while an attempt may have committed (a
// transaction timeout that struck a commit in flight: FDB retries no 1031)
// is not the end: while ctx lasts, fn runs again in a new transaction, told
// maybeCommitted, so the operation finds its own commit rather than leave
// the caller unable to know (at most maxRecoveries times). The error
// returned is maybe-committed (IsMaybeCommitted) whenever some attempt may
// have applied.
func TransactWatched(ctx context.Context, db Database, fn func(tr Transaction, maybeCommitted bool) error) error {
	maybe := false
	for recoveries := 0; ; recoveries++ {
		tr, err := db.CreateTransaction()
		if err != nil {
			return maybeCommitted(err, maybe)
		}
		w := &CommitWatcher{Transaction: tr, unknown: maybe}
		err = Retry(ctx, w, func(Transaction) error { return fn(w, w.MaybeCommitted()) })
		if err == nil {
			return nil
		}
		maybe = maybe || w.MaybeCommitted() || IsMaybeCommitted(err)
		err = maybeCommitted(err, maybe)
		// Only an engine error (a code) ends the loop unresolved: an error
		// of fn's own was decided knowing maybeCommitted.
		if !maybe || Code(err) == 0 || ctx.Err() != nil || recoveries == maxRecoveries {
			return err
		}
	}
}
