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
