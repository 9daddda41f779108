package kvtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: API = api-c.rst (fdb_transaction_cancel, fdb_transaction_reset,
// fdb_transaction_on_error) and api-common.rst.inc (timeout blurbs); ERR =
// api-error-codes.rst; DG = developer-guide.rst ('Programming with futures').

func txCases() []Case {
	return []Case{
		{
			Name: "tx/cancel",
			Rule: "After Cancel, reads and Commit fail with 1025 transaction_cancelled and nothing is applied (API fdb_transaction_cancel).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Set(key(h, "c/k"), []byte("v"))
				tr.Cancel()
				_, err = get(tr, key(h, "c/other"))
				if err := expectCode("Get after Cancel", err, kv.ErrTransactionCancelled); err != nil {
					return err
				}
				_, err = tr.GetRange(rng(h, "c/", "c0"), kv.RangeOptions{}).GetSliceWithError()
				if err := expectCode("GetRange after Cancel", err, kv.ErrTransactionCancelled); err != nil {
					return err
				}
				tr.Set(key(h, "c/k2"), []byte("v"))
				err = tr.Commit()
				if err := expectCode("Commit after Cancel", err, kv.ErrTransactionCancelled); err != nil {
					return err
				}
				if err := expectStored(h, "write before Cancel", key(h, "c/k"), nil); err != nil {
					return err
				}
				return expectStored(h, "write after Cancel", key(h, "c/k2"), nil)
			},
		},
		{
			Name: "tx/cancel-not-retryable",
			Rule: "OnError does not retry 1025 transaction_cancelled: it returns the error (ERR: transaction_cancelled is not retryable).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Cancel()
				_, err = get(tr, key(h, "c/k"))
				if err := expectCode("Get after Cancel", err, kv.ErrTransactionCancelled); err != nil {
					return err
				}
				return expectCode("OnError(1025)", tr.OnError(err), kv.ErrTransactionCancelled)
			},
		},
		{
			Name: "tx/timeout",
			Rule: "A transaction whose timeout has passed (measured from creation) fails its operations and Commit with 1031 transaction_timed_out and applies nothing (API timeout blurb 1).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if err := tr.Options().SetTimeout(100); err != nil {
					return expectNoErr("SetTimeout", err)
				}
				tr.Set(key(h, "c/k"), []byte("v"))
				h.Advance(300 * time.Millisecond)
				_, err = get(tr, key(h, "c/other"))
				if err := expectCode("Get after the timeout", err, kv.ErrTransactionTimedOut); err != nil {
					return err
				}
				err = tr.Commit()
				if err := expectCode("Commit after the timeout", err, kv.ErrTransactionTimedOut); err != nil {
					return err
				}
				return expectStored(h, "write of the timed-out transaction", key(h, "c/k"), nil)
			},
		},
		{
			Name: "tx/timeout-zero-disables",
			Rule: "SetTimeout(0) disables the timeout (API timeout blurb 1: 'If set to 0, all timeouts will be disabled').",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if err := tr.Options().SetTimeout(100); err != nil {
					return expectNoErr("SetTimeout(100)", err)
				}
				if err := tr.Options().SetTimeout(0); err != nil {
					return expectNoErr("SetTimeout(0)", err)
				}
				h.Advance(300 * time.Millisecond)
				if _, err := get(tr, key(h, "c/k")); err != nil {
					return expectNoErr("Get 300 ms later with the timeout disabled", err)
				}
				tr.Set(key(h, "c/k"), []byte("v"))
				return expectNoErr("Commit", tr.Commit())
			},
		},
		{
			Name: "tx/reset",
			Rule: "Reset discards the transaction's writes and read state; the transaction can then be used afresh (API fdb_transaction_reset).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "c/r", "0"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := get(tr, key(h, "c/r")); err != nil {
					return expectNoErr("Get", err)
				}
				tr.Set(key(h, "c/discarded"), []byte("v"))
				if err := seed(h, "c/r", "1"); err != nil { // would conflict with the read before Reset
					return err
				}
				tr.Reset()
				tr.Set(key(h, "c/kept"), []byte("v"))
				if err := tr.Commit(); err != nil {
					return fmt.Errorf("commit after Reset: got %v, want success (the earlier read was discarded)", err)
				}
				if err := expectStored(h, "write before Reset", key(h, "c/discarded"), nil); err != nil {
					return err
				}
				return expectStored(h, "write after Reset", key(h, "c/kept"), []byte("v"))
			},
		},
		{
			Name: "tx/on-error-resets",
			Rule: "OnError with a retryable error (1020) returns nil and resets the transaction: its writes are discarded and it takes a new read version (API fdb_transaction_on_error).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				rv1, err := grv(tr)
				if err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				tr.Set(key(h, "c/discarded"), []byte("v"))
				if err := seed(h, "c/r", "1"); err != nil {
					return err
				}
				if err := tr.OnError(kv.ErrNotCommitted); err != nil {
					return fmt.Errorf("OnError(1020) = %v, want nil", err)
				}
				rv2, err := grv(tr)
				if err != nil {
					return expectNoErr("GetReadVersion after OnError", err)
				}
				if rv2 <= rv1 {
					return fmt.Errorf("read version after OnError %d not newer than %d (a commit happened in between)", rv2, rv1)
				}
				v, err := get(tr, key(h, "c/r"))
				if err := expectNoErr("Get after OnError", err); err != nil {
					return err
				}
				if err := expectValue("read after OnError sees the newer commit", v, []byte("1")); err != nil {
					return err
				}
				tr.Set(key(h, "c/kept"), []byte("v"))
				if err := tr.Commit(); err != nil {
					return expectNoErr("commit after OnError", err)
				}
				if err := expectStored(h, "write before OnError", key(h, "c/discarded"), nil); err != nil {
					return err
				}
				return expectStored(h, "write after OnError", key(h, "c/kept"), []byte("v"))
			},
		},
		{
			Name: "tx/on-error-not-retryable",
			Rule: "OnError returns a non-retryable error (2101, 1036, 2102) unchanged in code (ERR; fdb_error_predicate RETRYABLE).",
			Run: func(ctx context.Context, h Harness) error {
				for _, e := range []kv.Error{kv.ErrTransactionTooLarge, kv.ErrAccessedUnreadable, kv.ErrKeyTooLarge} {
					tr, err := newTx(h)
					if err != nil {
						return err
					}
					if err := expectCode(fmt.Sprintf("OnError(%d)", e.Code), tr.OnError(e), e); err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
}

func concurrencyCases() []Case {
	return []Case{
		{
			Name: "concurrency/many-futures",
			Rule: "A transaction can have many reads in flight at once: issue every Get, then wait on each, in any order, and each gets its own key's value (DG 'Programming with futures'; kv.Future).",
			Run: func(ctx context.Context, h Harness) error {
				const n = 64
				if err := commitWith(h, func(tr kv.Transaction) {
					for i := 0; i < n; i += 2 { // odd keys stay missing
						tr.Set(key(h, fmt.Sprintf("p/%03d", i)), []byte(fmt.Sprint("v", i)))
					}
				}); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Set(key(h, "p/001"), []byte("own"))
				futs := make([]kv.Future[[]byte], n)
				for i := range futs {
					futs[i] = tr.Get(key(h, fmt.Sprintf("p/%03d", i)))
				}
				rr := tr.GetRange(rng(h, "p/", "p0"), kv.RangeOptions{Limit: 3})
				rv := tr.GetReadVersion()
				for i := n - 1; i >= 0; i-- {
					v, err := futs[i].Get()
					if err != nil {
						return expectNoErr(fmt.Sprintf("Get p/%03d", i), err)
					}
					var want []byte
					switch {
					case i == 1:
						want = []byte("own")
					case i%2 == 0:
						want = []byte(fmt.Sprint("v", i))
					}
					if err := expectValue(fmt.Sprintf("p/%03d", i), v, want); err != nil {
						return err
					}
				}
				if _, err := rv.Get(); err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				kvs, err := rr.GetSliceWithError()
				if err := expectNoErr("GetRange", err); err != nil {
					return err
				}
				return expectPairs(h, "GetRange issued among the Gets", kvs, "p/000", "v0", "p/001", "own", "p/002", "v2")
			},
		},
		{
			Name: "concurrency/parallel-readers",
			Rule: "Reads of one transaction may be issued and waited on from several goroutines at once (kv.Transaction: safe for concurrent reads; DG 'Programming with futures').",
			Run: func(ctx context.Context, h Harness) error {
				const n = 16
				if err := commitWith(h, func(tr kv.Transaction) {
					for i := 0; i < n; i++ {
						tr.Set(key(h, fmt.Sprintf("p/%02d", i)), []byte(fmt.Sprint(i)))
					}
				}); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := 0; j < 20; j++ {
							k := (i + j) % n
							v, err := tr.Get(key(h, fmt.Sprintf("p/%02d", k))).Get()
							if err != nil {
								errs <- fmt.Errorf("goroutine %d Get: %w", i, err)
								return
							}
							if string(v) != fmt.Sprint(k) {
								errs <- fmt.Errorf("goroutine %d: p/%02d = %s, want %d", i, k, show(v), k)
								return
							}
							kvs, err := tr.Snapshot().GetRange(rng(h, "p/", "p0"), kv.RangeOptions{Limit: 2, Reverse: j%2 == 0}).GetSliceWithError()
							if err != nil {
								errs <- fmt.Errorf("goroutine %d GetRange: %w", i, err)
								return
							}
							if len(kvs) != 2 {
								errs <- fmt.Errorf("goroutine %d GetRange returned %d pairs, want 2", i, len(kvs))
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					return err
				}
				tr.Set(marker(h), []byte("x"))
				return expectNoErr("commit after parallel reads", tr.Commit())
			},
		},
	}
}
