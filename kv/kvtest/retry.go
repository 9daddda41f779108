package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: API = api-c.rst fdb_transaction_on_error and api-common.rst.inc
// (|option-set-retry-limit-blurb*|, |option-set-timeout-blurb*|: options
// survive onError from API 610; the timeout runs from creation or Reset);
// ERR = api-error-codes.rst and bindings/c/fdb_c.cpp fdb_error_predicate;
// GO = the Go binding's Database.Transact / ReadTransact.

// maxAttempts stops a case's fn from looping forever on an engine whose retry
// loop ignores a limit.
const maxAttempts = 20

var errTooManyAttempts = errors.New("kvtest: fn ran too many times; the retry loop does not stop")

// conflictWith commits, from a separate transaction, a write to k: used inside
// a Transact fn after it read k, so that the attempt fails with 1020.
func conflictWith(h Harness, k []byte, v string) error {
	return commitWith(h, func(tr kv.Transaction) { tr.Set(k, []byte(v)) })
}

func retryCases() []Case {
	return []Case{
		{
			Name: "retry/conflict-retried",
			Rule: "Transact retries a transaction that failed with 1020 until it commits, running fn again (GO Transact; ERR: 1020 is retryable).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "x/k")
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if _, err := tr.Get(k).Get(); err != nil {
						return err
					}
					if attempts == 1 {
						if err := conflictWith(h, k, "other"); err != nil {
							return fmt.Errorf("conflicting write: %w", err)
						}
					}
					tr.Set(k, []byte(fmt.Sprintf("attempt %d", attempts)))
					return nil
				})
				if err != nil {
					return fmt.Errorf("Transact: %w", err)
				}
				if attempts != 2 {
					return fmt.Errorf("fn ran %d times, want 2 (one conflict, one success)", attempts)
				}
				return expectStored(h, "value", k, []byte("attempt 2"))
			},
		},
		{
			Name: "retry/non-fdb-error",
			Rule: "An error from fn that carries no FDB code is returned at once, without retry or commit (GO Transact: only FDB errors go to OnError).",
			Run: func(ctx context.Context, h Harness) error {
				boom := errors.New("application error")
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					tr.Set(key(h, "x/k"), []byte("v"))
					return fmt.Errorf("wrapped: %w", boom)
				})
				if !errors.Is(err, boom) {
					return fmt.Errorf("Transact returned %v, want the application error", err)
				}
				if attempts != 1 {
					return fmt.Errorf("fn ran %d times, want 1", attempts)
				}
				return expectStored(h, "write of the failed fn", key(h, "x/k"), nil)
			},
		},
		{
			Name: "retry/commit-unknown-result",
			Rule: "1021 commit_unknown_result is retried by OnError, so fn must be idempotent: a counter guarded by a marker read in the retry is applied once (ERR: 1021 maybe-committed and retryable; DG 'Transactions with unknown results').",
			Run: func(ctx context.Context, h Harness) error {
				counter, done := key(h, "x/counter"), key(h, "x/done-id-7")
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					v, err := tr.Get(done).Get()
					if err != nil {
						return err
					}
					if v != nil {
						return nil // already applied
					}
					tr.Add(counter, le(1, 0, 0, 0))
					tr.Set(done, []byte{})
					if attempts == 1 {
						return kv.ErrCommitUnknownResult
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("Transact: %w", err)
				}
				if attempts != 2 {
					return fmt.Errorf("fn ran %d times, want 2 (1021 retried once)", attempts)
				}
				return expectStored(h, "counter", counter, le(1, 0, 0, 0))
			},
		},
		{
			Name: "retry/not-retryable/2101",
			Rule: "2101 transaction_too_large is not retryable: Transact returns it after one attempt (ERR: 2101 not retryable).",
			Run: func(ctx context.Context, h Harness) error {
				v := bytes.Repeat([]byte{'x'}, 100_000)
				return expectNotRetried(ctx, h, kv.ErrTransactionTooLarge, func(tr kv.Transaction) error {
					for i := 0; i < 105; i++ {
						tr.Set(key(h, fmt.Sprintf("x/big/%03d", i)), v)
					}
					return nil
				})
			},
		},
		{
			Name: "retry/not-retryable/1036",
			Rule: "1036 accessed_unreadable is not retryable: Transact returns it after one attempt (ERR).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNotRetried(ctx, h, kv.ErrAccessedUnreadable, func(tr kv.Transaction) error {
					tr.SetVersionstampedValue(key(h, "x/k"), vsValue("", ""))
					_, err := tr.Get(key(h, "x/k")).Get()
					return err
				})
			},
		},
		{
			Name: "retry/not-retryable/1025",
			Rule: "1025 transaction_cancelled is not retryable: Transact returns it after one attempt (ERR; api-c fdb_transaction_cancel).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNotRetried(ctx, h, kv.ErrTransactionCancelled, func(tr kv.Transaction) error {
					tr.Cancel()
					_, err := tr.Get(key(h, "x/k")).Get()
					return err
				})
			},
		},
		{
			Name: "retry/not-retryable/2102",
			Rule: "2102 key_too_large is not retryable: Transact returns it after one attempt (ERR).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNotRetried(ctx, h, kv.ErrKeyTooLarge, func(tr kv.Transaction) error {
					tr.Set(keyOfSize(h, "x/", kv.MaxKeySize+1), []byte("v"))
					return nil
				})
			},
		},
		{
			Name: "retry/retry-limit",
			Rule: "SetRetryLimit(2) makes OnError return the error after 2 retries (3 attempts), and the option set on the first attempt survives OnError (API retry-limit blurbs: not reset by onError from API 610).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "x/k")
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if attempts == 1 {
						if err := tr.Options().SetRetryLimit(2); err != nil {
							return fmt.Errorf("SetRetryLimit: %w", err)
						}
					}
					if _, err := tr.Get(k).Get(); err != nil {
						return err
					}
					if err := conflictWith(h, k, fmt.Sprint(attempts)); err != nil {
						return fmt.Errorf("conflicting write: %w", err)
					}
					tr.Set(key(h, "x/out"), []byte("v"))
					return nil
				})
				if err := expectCode("Transact conflicting forever with retry limit 2", err, kv.ErrNotCommitted); err != nil {
					return err
				}
				if attempts != 3 {
					return fmt.Errorf("fn ran %d times, want 3 (retry limit 2)", attempts)
				}
				return nil
			},
		},
		{
			Name: "retry/timeout",
			Rule: "SetTimeout cancels the transaction once the time has passed: operations fail with 1031 transaction_timed_out, which Transact returns without retry (API timeout blurbs; ERR: 1031 not retryable).",
			Run: func(ctx context.Context, h Harness) error {
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if err := tr.Options().SetTimeout(100); err != nil {
						return fmt.Errorf("SetTimeout: %w", err)
					}
					h.Advance(300 * time.Millisecond)
					_, err := tr.Get(key(h, "x/k")).Get()
					return err
				})
				if err := expectCode("Transact whose transaction outlived its 100 ms timeout", err, kv.ErrTransactionTimedOut); err != nil {
					return err
				}
				if attempts != 1 {
					return fmt.Errorf("fn ran %d times, want 1", attempts)
				}
				return nil
			},
		},
		{
			Name: "retry/timeout-survives-on-error",
			Rule: "A timeout set on the first attempt is kept across OnError and measured from the transaction's creation, so it bounds the whole retry loop (API timeout blurb 3: from API 610 the timeout is not reset by onError).",
			Run: func(ctx context.Context, h Harness) error {
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if attempts == 1 {
						if err := tr.Options().SetTimeout(250); err != nil {
							return fmt.Errorf("SetTimeout: %w", err)
						}
					}
					h.Advance(150 * time.Millisecond)
					if _, err := tr.Get(key(h, "x/k")).Get(); err != nil {
						return err
					}
					return kv.ErrNotCommitted // a retryable error every time
				})
				if err := expectCode("Transact retrying past its 250 ms timeout", err, kv.ErrTransactionTimedOut); err != nil {
					return err
				}
				if attempts > 2 {
					return fmt.Errorf("fn ran %d times; the timeout (measured from creation, kept across OnError) should have stopped it at attempt 2", attempts)
				}
				return nil
			},
		},
		{
			Name: "retry/ctx-cancel",
			Rule: "When ctx is done, Transact cancels the transaction and returns an error that matches ctx's error, without retrying (kv.Database.Transact contract).",
			Run: func(ctx context.Context, h Harness) error {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				attempts := 0
				var opErr error
				err := h.DB.Transact(cctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					cancel()
					// The cancellation reaches the transaction asynchronously.
					deadline := time.Now().Add(fireWait)
					for time.Now().Before(deadline) {
						if _, opErr = tr.Get(key(h, "x/k")).Get(); opErr != nil {
							return opErr
						}
						time.Sleep(time.Millisecond)
					}
					tr.Set(key(h, "x/k"), []byte("committed after ctx was cancelled"))
					return nil
				})
				if !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Transact after ctx cancel: got %v, want an error matching context.Canceled", err)
				}
				if attempts != 1 {
					return fmt.Errorf("fn ran %d times, want 1", attempts)
				}
				if !errors.Is(opErr, kv.ErrTransactionCancelled) {
					return fmt.Errorf("operation after ctx cancel: got %v, want 1025 transaction_cancelled", opErr)
				}
				return expectStored(h, "write after ctx cancel", key(h, "x/k"), nil)
			},
		},
		{
			Name: "retry/ctx-done-before",
			Rule: "Transact with an already-cancelled ctx returns ctx's error without running fn (kv.Database.Transact contract).",
			Run: func(ctx context.Context, h Harness) error {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				ran := false
				err := h.DB.Transact(cctx, func(tr kv.Transaction) error {
					ran = true
					tr.Set(key(h, "x/k"), []byte("v"))
					return nil
				})
				if !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Transact with a cancelled ctx: got %v, want context.Canceled", err)
				}
				if ran {
					if err := expectStored(h, "write", key(h, "x/k"), nil); err != nil {
						return fmt.Errorf("fn ran and committed with a cancelled ctx: %w", err)
					}
				}
				return nil
			},
		},
		{
			Name: "retry/ctx-stops-retries",
			Rule: "A ctx cancelled while Transact retries stops the loop with ctx's error (kv.Database.Transact contract).",
			Run: func(ctx context.Context, h Harness) error {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				attempts := 0
				err := h.DB.Transact(cctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if attempts == 2 {
						cancel()
					}
					return kv.ErrNotCommitted
				})
				if !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Transact: got %v, want an error matching context.Canceled", err)
				}
				if attempts != 2 {
					return fmt.Errorf("fn ran %d times, want 2", attempts)
				}
				return nil
			},
		},
		{
			Name: "retry/read-transact-no-commit",
			Rule: "ReadTransact does not commit: writes made through the transaction it passes are discarded (GO ReadTransact; kv.Database.ReadTransact).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "x/k", "v"); err != nil {
					return err
				}
				var got []byte
				err := h.DB.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
					v, err := rt.Get(key(h, "x/k")).Get()
					if err != nil {
						return err
					}
					got = v
					if tr, ok := rt.(kv.Transaction); ok {
						tr.Set(key(h, "x/written"), []byte("must not be committed"))
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("ReadTransact: %w", err)
				}
				if err := expectValue("read in ReadTransact", got, []byte("v")); err != nil {
					return err
				}
				return expectStored(h, "write inside ReadTransact", key(h, "x/written"), nil)
			},
		},
		{
			Name: "retry/read-transact-retries",
			Rule: "ReadTransact retries retryable errors and returns other errors at once (GO ReadTransact uses OnError like Transact).",
			Run: func(ctx context.Context, h Harness) error {
				attempts := 0
				err := h.DB.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if attempts == 1 {
						return kv.ErrNotCommitted
					}
					_, err := rt.Get(key(h, "x/k")).Get()
					return err
				})
				if err != nil {
					return fmt.Errorf("ReadTransact: %w", err)
				}
				if attempts != 2 {
					return fmt.Errorf("fn ran %d times, want 2", attempts)
				}
				boom := errors.New("application error")
				attempts = 0
				err = h.DB.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
					attempts++
					return boom
				})
				if !errors.Is(err, boom) || attempts != 1 {
					return fmt.Errorf("ReadTransact with an application error: got %v after %d attempts, want it after 1", err, attempts)
				}
				return nil
			},
		},
	}
}

// expectNotRetried runs fn in Transact and requires want after one attempt,
// with nothing committed.
func expectNotRetried(ctx context.Context, h Harness, want kv.Error, fn func(tr kv.Transaction) error) error {
	attempts := 0
	err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
		attempts++
		if attempts > maxAttempts {
			return errTooManyAttempts
		}
		tr.Set(key(h, "x/canary"), []byte("must not be applied"))
		return fn(tr)
	})
	if err := expectCode("Transact", err, want); err != nil {
		return err
	}
	if attempts != 1 {
		return fmt.Errorf("fn ran %d times for non-retryable %v, want 1", attempts, want)
	}
	return expectStored(h, "write of the failed transaction", key(h, "x/canary"), nil)
}
