// Package txn holds the commit-watching helpers that quick, cron and worker
// share to learn whether an earlier attempt of their own transaction may
// have committed (commit_unknown_result, or a timeout or cancellation that
// struck a commit in flight), so an operation can look for its own outcome
// instead of applying twice. They are internal: a user's code runs its
// transactions through kv.Database.Transact and the kv.Retry loop.
package txn

import (
	"context"

	"github.com/quickfdb/quickfdb/kv"
)

// CommitWatcher wraps a transaction to remember whether a commit ended with a
// maybe-committed error, so a function run by Retry can tell that an earlier
// attempt may have applied and check for its own outcome before acting
// again.
type CommitWatcher struct {
	kv.Transaction
	unknown bool
	// conflicts counts this loop's commits that failed with 1020
	// not_committed: an operation that keeps conflicting may spread its
	// writes (quick's enqueue grows a contended zone).
	conflicts int
}

// WatchCommits wraps tr in a CommitWatcher.
func WatchCommits(tr kv.Transaction) *CommitWatcher { return &CommitWatcher{Transaction: tr} }

// Commit implements kv.Transaction.
func (c *CommitWatcher) Commit() error {
	err := c.Transaction.Commit()
	if kv.IsMaybeCommitted(err) {
		c.unknown = true
	}
	if kv.Code(err) == kv.ErrNotCommitted.Code {
		c.conflicts++
	}
	return err
}

// Conflicts returns how many commits of this watcher's loop failed with
// 1020 not_committed so far.
func (c *CommitWatcher) Conflicts() int { return c.conflicts }

// ConflictsOf returns Conflicts of tr when tr is the transaction
// TransactWatched passes its function, and 0 for any other transaction
// (one of the caller's own, which this package cannot watch).
func ConflictsOf(tr kv.Transaction) int {
	if c, ok := tr.(*CommitWatcher); ok {
		return c.conflicts
	}
	return 0
}

// MaybeCommitted reports whether an earlier commit may have applied.
func (c *CommitWatcher) MaybeCommitted() bool { return c.unknown }

// maxRecoveries bounds the fresh transactions TransactWatched starts after a
// retry loop ended with its outcome unknown.
const maxRecoveries = 10

// TransactWatched runs fn in a transaction of db with the retry loop, as
// kv.Database.Transact does, telling fn whether an earlier attempt may have committed
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
// returned is maybe-committed (kv.IsMaybeCommitted) whenever some attempt may
// have applied.
func TransactWatched(ctx context.Context, db kv.Database, fn func(tr kv.Transaction, maybeCommitted bool) error) error {
	maybe, conflicts := false, 0
	for recoveries := 0; ; recoveries++ {
		tr, err := db.CreateTransaction()
		if err != nil {
			return maybeCommitted(err, maybe)
		}
		w := &CommitWatcher{Transaction: tr, unknown: maybe, conflicts: conflicts}
		err = kv.Retry(ctx, w, func(kv.Transaction) error { return fn(w, w.MaybeCommitted()) })
		if err == nil {
			return nil
		}
		maybe = maybe || w.MaybeCommitted() || kv.IsMaybeCommitted(err)
		conflicts = w.conflicts
		err = maybeCommitted(err, maybe)
		// Only an engine error (a code) ends the loop unresolved: an error
		// of fn's own was decided knowing maybeCommitted.
		if !maybe || kv.Code(err) == 0 || ctx.Err() != nil || recoveries == maxRecoveries {
			return err
		}
	}
}

// maybeCommitted wraps err in a kv.MaybeCommittedError when an earlier
// attempt may have committed and err does not say so itself.
func maybeCommitted(err error, maybe bool) error {
	if err == nil || !maybe || kv.IsMaybeCommitted(err) {
		return err
	}
	return &kv.MaybeCommittedError{Err: err}
}
