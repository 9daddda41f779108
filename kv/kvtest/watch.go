package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: API = documentation/sphinx/source/api-common.rst.inc (release-7.3:
// |transaction-watch-blurb|, |transaction-watch-committed-blurb|,
// |transaction-watch-error-blurb|, |transaction-watch-limit-blurb|), used by
// api-c.rst fdb_transaction_watch; RYW = fdbclient/ReadYourWrites.actor.cpp
// (watch actor); NATIVE = fdbclient/NativeAPI.actor.cpp.
//
// Whether setting a key to the value it already holds fires a watch is not
// documented, so no case depends on it.

const (
	// fireWait bounds waiting for a watch that must fire (FDB: a round trip).
	fireWait = 10 * time.Second
	// quietWait is how long a watch that must not fire is observed. A correct
	// engine passes whatever it is; a shorter wait only weakens the check.
	quietWait = 200 * time.Millisecond
)

// armWatch creates a watch on k in a new transaction and commits it.
func armWatch(h Harness, k []byte) (kv.Watch, error) {
	tr, err := newTx(h)
	if err != nil {
		return nil, err
	}
	w := tr.Watch(k)
	if err := tr.Commit(); err != nil {
		w.Cancel()
		return nil, fmt.Errorf("committing the watch's transaction: %w", err)
	}
	return w, nil
}

// expectFires waits for w to fire.
func expectFires(ctx context.Context, what string, w kv.Watch) error {
	err := waitFor(ctx, w, fireWait)
	if err != nil {
		return fmt.Errorf("%s: watch did not fire: Wait = %v", what, err)
	}
	return nil
}

// expectQuiet checks that w has not fired within quietWait.
func expectQuiet(ctx context.Context, what string, w kv.Watch) error {
	err := waitFor(ctx, w, quietWait)
	if err == nil {
		return fmt.Errorf("%s: watch fired, want no change reported", what)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: Wait = %v, want it still pending (context deadline)", what, err)
	}
	return ctx.Err()
}

func watchCases() []Case {
	return []Case{
		{
			Name: "watch/fires-on-change",
			Rule: "A committed watch fires when another transaction changes the key's value (API watch blurb; DG 'Watches').",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "w/k")
				if err := seed(h, "w/k", "a"); err != nil {
					return err
				}
				w, err := armWatch(h, k)
				if err != nil {
					return err
				}
				defer w.Cancel()
				if err := seed(h, "w/k", "b"); err != nil {
					return err
				}
				return expectFires(ctx, "after another transaction set a new value", w)
			},
		},
		{
			Name: "watch/fires-on-insert",
			Rule: "A watch on a missing key fires when the key is created (API watch blurb: a change relative to the value readable by the transaction, absent included).",
			Run: func(ctx context.Context, h Harness) error {
				w, err := armWatch(h, key(h, "w/k"))
				if err != nil {
					return err
				}
				defer w.Cancel()
				if err := seed(h, "w/k", "new"); err != nil {
					return err
				}
				return expectFires(ctx, "after the key was created", w)
			},
		},
		{
			Name: "watch/fires-on-clear",
			Rule: "A watch fires when the key is cleared, by Clear or by a ClearRange over it (API watch blurb: the value changed to absent).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "w/a", "1", "w/b", "2"); err != nil {
					return err
				}
				wa, err := armWatch(h, key(h, "w/a"))
				if err != nil {
					return err
				}
				defer wa.Cancel()
				wb, err := armWatch(h, key(h, "w/b"))
				if err != nil {
					return err
				}
				defer wb.Cancel()
				if err := commitWith(h, func(tr kv.Transaction) {
					tr.Clear(key(h, "w/a"))
					tr.ClearRange(rng(h, "w/b", "w/c"))
				}); err != nil {
					return err
				}
				if err := expectFires(ctx, "after Clear", wa); err != nil {
					return err
				}
				return expectFires(ctx, "after ClearRange", wb)
			},
		},
		{
			Name: "watch/fires-on-atomic",
			Rule: "A watch fires when an atomic operation by another transaction changes the value (API watch blurb).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "w/n")
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(k, le(1, 0)) }); err != nil {
					return err
				}
				w, err := armWatch(h, k)
				if err != nil {
					return err
				}
				defer w.Cancel()
				if err := commitWith(h, func(tr kv.Transaction) { tr.Add(k, le(1, 0)) }); err != nil {
					return err
				}
				return expectFires(ctx, "after Add", w)
			},
		},
		{
			Name: "watch/no-change-no-fire",
			Rule: "A watch whose key is not changed does not fire; writes to other keys do not fire it (API watch blurb: fires on a change to the key's value).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "w/k", "a"); err != nil {
					return err
				}
				w, err := armWatch(h, key(h, "w/k"))
				if err != nil {
					return err
				}
				defer w.Cancel()
				if err := seed(h, "w/k0", "neighbour", "w/k\x00", "after"); err != nil {
					return err
				}
				return expectQuiet(ctx, "after writes to other keys only", w)
			},
		},
		{
			Name: "watch/compares-own-write",
			Rule: "A watch created after the transaction's own Set compares with that new value: once committed it stays quiet, then fires on the next change (API watch blurb: the initial value is the value as modified by the transaction itself).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "w/k")
				if err := seed(h, "w/k", "old"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Set(k, []byte("new"))
				w := tr.Watch(k)
				defer w.Cancel()
				if err := tr.Commit(); err != nil {
					return expectNoErr("commit", err)
				}
				if err := expectQuiet(ctx, "after its own transaction committed the watched value", w); err != nil {
					return err
				}
				if err := seed(h, "w/k", "old"); err != nil { // back to the value before the transaction
					return err
				}
				return expectFires(ctx, "after another transaction changed the value away from the one the watching transaction wrote", w)
			},
		},
		{
			Name: "watch/own-later-write-fires",
			Rule: "A watch reports a change made by its own transaction after the watch was created immediately, even before commit (API watch-committed blurb: 'a watch will immediately report changes made by the transaction itself').",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "w/k")
				if err := seed(h, "w/k", "old"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				w := tr.Watch(k)
				defer w.Cancel()
				tr.Set(k, []byte("new"))
				if err := expectFires(ctx, "after its own transaction set a new value (not committed)", w); err != nil {
					return err
				}
				tr.Cancel()
				return nil
			},
		},
		{
			Name: "watch/armed-at-commit",
			Rule: "Until its transaction commits, a watch does not report changes by other transactions; after the commit it compares with the value at its read version, so a change in between fires it (API watch-committed blurb).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "w/k")
				if err := seed(h, "w/k", "a"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := grv(tr); err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				w := tr.Watch(k)
				defer w.Cancel()
				if err := seed(h, "w/k", "b"); err != nil {
					return err
				}
				if err := expectQuiet(ctx, "before the watching transaction committed", w); err != nil {
					return err
				}
				// The transaction is read-only (a watch alone), so it commits.
				if err := tr.Commit(); err != nil {
					return expectNoErr("commit of the watching transaction", err)
				}
				return expectFires(ctx, "after commit: the value differs from the one at its read version", w)
			},
		},
		{
			Name: "watch/reset-before-commit",
			Rule: "A watch of a transaction reset before committing fails with 1025 transaction_cancelled (API watch-error blurb: 'If an uncommitted transaction is reset or destroyed, then any watches it created will be set with the transaction_cancelled error').",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				w := tr.Watch(key(h, "w/k"))
				defer w.Cancel()
				tr.Reset()
				err = waitFor(ctx, w, fireWait)
				return expectCode("Wait on the watch of a reset transaction", err, kv.ErrTransactionCancelled)
			},
		},
		{
			Name: "watch/not-armed-without-commit",
			Rule: "A watch of a transaction that never commits is not armed: changes by others are not reported (API watch-committed blurb).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				w := tr.Watch(key(h, "w/k"))
				defer w.Cancel()
				if err := seed(h, "w/k", "changed"); err != nil {
					return err
				}
				if err := expectQuiet(ctx, "watch of an uncommitted transaction after another transaction's change", w); err != nil {
					return err
				}
				tr.Reset()
				return nil
			},
		},
		{
			Name: "watch/failed-commit",
			Rule: "If the watch's transaction fails to commit, the watch fails with the commit's error, here 1020 (API watch-error blurb; NATIVE commitAndWatch: cancelWatches(e)).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "w/r", "0"); err != nil {
					return err
				}
				var w kv.Watch
				defer func() {
					if w != nil {
						w.Cancel()
					}
				}()
				if err := expectConflict(h, func(tr kv.Transaction) error {
					if _, err := get(tr, key(h, "w/r")); err != nil {
						return err
					}
					w = tr.Watch(key(h, "w/k"))
					return nil
				}, setKey(h, "w/r", "1")); err != nil {
					return err
				}
				err := waitFor(ctx, w, fireWait)
				return expectCode("Wait on the watch of a transaction that failed with 1020", err, kv.ErrNotCommitted)
			},
		},
		{
			Name: "watch/cancel",
			Rule: "Cancelling a watch makes Wait fail with 1101 operation_cancelled (API: cancelling a future sets it to operation_cancelled; kv.Watch.Cancel).",
			Run: func(ctx context.Context, h Harness) error {
				w, err := armWatch(h, key(h, "w/k"))
				if err != nil {
					return err
				}
				w.Cancel()
				err = waitFor(ctx, w, fireWait)
				return expectCode("Wait after Cancel", err, kv.ErrOperationCancelled)
			},
		},
		{
			Name: "watch/wait-honours-ctx",
			Rule: "Wait on a watch that has not fired returns the context's error when the context is done (kv.Watch.Wait contract).",
			Run: func(ctx context.Context, h Harness) error {
				w, err := armWatch(h, key(h, "w/k"))
				if err != nil {
					return err
				}
				defer w.Cancel()
				wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				err = w.Wait(wctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("Wait with an expiring context: got %v, want context.DeadlineExceeded", err)
				}
				cctx, ccancel := context.WithCancel(ctx)
				ccancel()
				if err := w.Wait(cctx); !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Wait with a cancelled context: got %v, want context.Canceled", err)
				}
				// The watch still works afterwards.
				if err := seed(h, "w/k", "v"); err != nil {
					return err
				}
				return expectFires(ctx, "after the key changed", w)
			},
		},
		{
			Name: "watch/too-many",
			Rule: "A database allows 10,000 outstanding watches by default; creating one more fails that watch with 1032 too_many_watches (API watch-limit blurb; NATIVE DatabaseContext::increaseWatchCounter).",
			Slow: true,
			Run:  runTooManyWatches,
		},
	}
}

// runTooManyWatches arms 10,001 watches on distinct keys in one transaction.
// On FDB the counter is taken when each watch is created (NATIVE
// Transaction::watch), so the error shows on a watch future; an engine that
// counts at commit may fail the commit with 1032 instead. Either passes.
func runTooManyWatches(ctx context.Context, h Harness) error {
	const n = 10_001
	tr, err := newTx(h)
	if err != nil {
		return err
	}
	watches := make([]kv.Watch, n)
	for i := range watches {
		watches[i] = tr.Watch(key(h, fmt.Sprintf("w/many/%05d", i)))
	}
	defer func() {
		for _, w := range watches {
			w.Cancel()
		}
	}()
	cerr := tr.Commit()
	if cerr != nil && !errors.Is(cerr, kv.ErrTooManyWatches) {
		return fmt.Errorf("commit of the transaction with %d watches: got %v, want success or 1032", n, cerr)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	others := map[int]int{}
	var wg sync.WaitGroup
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.Wait(wctx)
			if errors.Is(err, kv.ErrTooManyWatches) {
				once.Do(func() { close(found) })
				return
			}
			if err != nil && wctx.Err() == nil {
				mu.Lock()
				others[kv.Code(err)]++
				mu.Unlock()
			}
		}()
	}
	select {
	case <-found:
		cancel()
		wg.Wait()
		return nil
	case <-wctx.Done():
		wg.Wait()
		if cerr != nil {
			return nil // the commit reported 1032
		}
		return fmt.Errorf("%d watches armed and none failed with 1032 too_many_watches (other watch errors by code: %v)", n, others)
	}
}
