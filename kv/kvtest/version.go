package kvtest

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: DG = developer-guide.rst (release-7.3, 'How FoundationDB Detects
// Conflicts', 'Long transactions', error list); KL = known-limitations.rst;
// API = api-c.rst (fdb_transaction_get_read_version,
// fdb_transaction_get_committed_version); FACT = /work/shared/fdb-facts.md
// (measured on FDB 7.3).

func versionCases() []Case {
	return []Case{
		{
			Name: "version/lazy",
			Rule: "The read version is taken lazily, at the first read or GetReadVersion, not at transaction creation: a transaction created before another commits sees that commit (DG: 'Each transaction will get a read version assigned when it issues the first read or before it tries to commit').",
			Run: func(ctx context.Context, h Harness) error {
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				txB, err := newTx(h)
				if err != nil {
					return err
				}
				txB.Set(key(h, "g/k"), []byte("b"))
				if err := txB.Commit(); err != nil {
					return expectNoErr("txB commit", err)
				}
				cv, err := txB.GetCommittedVersion()
				if err != nil {
					return expectNoErr("txB GetCommittedVersion", err)
				}
				rv, err := grv(txA)
				if err != nil {
					return expectNoErr("txA GetReadVersion", err)
				}
				if rv < cv {
					return fmt.Errorf("txA read version %d < txB commit version %d although txA took it after txB committed", rv, cv)
				}
				v, err := get(txA, key(h, "g/k"))
				if err := expectNoErr("txA Get", err); err != nil {
					return err
				}
				return expectValue("txA sees txB's commit", v, []byte("b"))
			},
		},
		{
			Name: "version/stable-in-tx",
			Rule: "All reads of a transaction happen at its single read version: GetReadVersion returns the same value, and a commit by another transaction is not seen (DG: 'All reads that happen during that transaction will be read as of that version').",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "g/k", "1"); err != nil {
					return err
				}
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				rv1, err := grv(txA)
				if err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				if err := seed(h, "g/k", "2", "g/new", "x"); err != nil {
					return err
				}
				rv2, err := grv(txA)
				if err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				if rv1 != rv2 {
					return fmt.Errorf("GetReadVersion changed within a transaction: %d then %d", rv1, rv2)
				}
				v, err := get(txA, key(h, "g/k"))
				if err := expectNoErr("Get", err); err != nil {
					return err
				}
				if err := expectValue("value at the read version", v, []byte("1")); err != nil {
					return err
				}
				kvs, err := txA.GetRange(rng(h, "g/", "g0"), kv.RangeOptions{}).GetSliceWithError()
				if err := expectNoErr("GetRange", err); err != nil {
					return err
				}
				return expectPairs(h, "range at the read version", kvs, "g/k", "1")
			},
		},
		{
			Name: "version/monotonic",
			Rule: "Read versions never go backwards across transactions, and a read version taken after a commit is at least its commit version (DG: the GRV proxy replies with the last committed version, guaranteeing external consistency).",
			Run: func(ctx context.Context, h Harness) error {
				var prev int64 = -1
				for i := 0; i < 5; i++ {
					tr, err := newTx(h)
					if err != nil {
						return err
					}
					rv, err := grv(tr)
					if err != nil {
						return expectNoErr("GetReadVersion", err)
					}
					if rv < prev {
						return fmt.Errorf("read version went backwards: %d after %d", rv, prev)
					}
					prev = rv
					tr.Set(key(h, "g/k"), []byte{byte(i)})
					if err := tr.Commit(); err != nil {
						return expectNoErr("commit", err)
					}
					cv, err := tr.GetCommittedVersion()
					if err != nil {
						return expectNoErr("GetCommittedVersion", err)
					}
					if cv < prev {
						return fmt.Errorf("commit version %d below earlier read version %d", cv, prev)
					}
					prev = cv
				}
				return nil
			},
		},
		{
			Name: "version/commit-after-read",
			Rule: "A committed transaction's commit version is greater than its read version (DG 'How FoundationDB Detects Conflicts': commit versions are assigned after read versions; API fdb_transaction_get_committed_version).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				rv, err := grv(tr)
				if err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				tr.Set(key(h, "g/k"), []byte("v"))
				if err := tr.Commit(); err != nil {
					return expectNoErr("commit", err)
				}
				cv, err := tr.GetCommittedVersion()
				if err != nil {
					return expectNoErr("GetCommittedVersion", err)
				}
				if cv <= rv {
					return fmt.Errorf("commit version %d not greater than read version %d", cv, rv)
				}
				return nil
			},
		},
		{
			Name: "version/read-only-committed-version",
			Rule: "GetCommittedVersion is -1 after committing a read-only transaction, including one that did nothing (API fdb_transaction_get_committed_version: read-only transactions do not have a commit version, -1).",
			Run: func(ctx context.Context, h Harness) error {
				for _, withRead := range []bool{false, true} {
					tr, err := newTx(h)
					if err != nil {
						return err
					}
					if withRead {
						if _, err := get(tr, key(h, "g/k")); err != nil {
							return expectNoErr("Get", err)
						}
					}
					if err := tr.Commit(); err != nil {
						return expectNoErr("read-only commit", err)
					}
					cv, err := tr.GetCommittedVersion()
					if err != nil {
						return expectNoErr("GetCommittedVersion", err)
					}
					if cv != -1 {
						return fmt.Errorf("read-only transaction (with read: %v) GetCommittedVersion = %d, want -1", withRead, cv)
					}
				}
				return nil
			},
		},
	}
}

func windowCases() []Case {
	return []Case{
		{
			Name: "window/read-too-old",
			Rule: "A read more than 5 seconds of versions after the read version fails with 1007 transaction_too_old (KL 'Long transactions'; DG error list; FACT: tested with a 7 s margin, the soft edge is not tested).",
			Slow: true,
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "t/k", "v"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := grv(tr); err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				h.Advance(7 * time.Second)
				// A key never read by this transaction, so no cache can answer.
				_, err = get(tr, key(h, "t/k"))
				return expectCode("Get 7 s after the read version", err, kv.ErrTransactionTooOld)
			},
		},
		{
			Name: "window/commit-too-old",
			Rule: "Committing more than 5 seconds of versions after the read version fails with 1007, even for blind writes (DG: resolvers only accept read versions less than 5 million versions old; FACT measured: blind-write commit 7 s after its read version got 1007).",
			Slow: true,
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := grv(tr); err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				tr.Set(key(h, "t/k"), []byte("late"))
				h.Advance(7 * time.Second)
				err = tr.Commit()
				if err := expectCode("commit 7 s after the read version", err, kv.ErrTransactionTooOld); err != nil {
					return err
				}
				return expectStored(h, "write of the too-old transaction", key(h, "t/k"), nil)
			},
		},
		{
			Name: "window/retried-after-too-old",
			Rule: "1007 is retryable: OnError resets the transaction, which then takes a fresh read version and commits (api-error-codes / fdb_error_predicate RETRYABLE_NOT_COMMITTED).",
			Slow: true,
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := grv(tr); err != nil {
					return expectNoErr("GetReadVersion", err)
				}
				h.Advance(7 * time.Second)
				_, err = get(tr, key(h, "t/k"))
				if err := expectCode("Get 7 s after the read version", err, kv.ErrTransactionTooOld); err != nil {
					return err
				}
				if err := tr.OnError(err); err != nil {
					return fmt.Errorf("OnError(1007) = %v, want nil (retryable)", err)
				}
				if _, err := get(tr, key(h, "t/k")); err != nil {
					return expectNoErr("Get after OnError", err)
				}
				tr.Set(key(h, "t/k"), []byte("v"))
				if err := tr.Commit(); err != nil {
					return expectNoErr("commit after OnError", err)
				}
				return expectStored(h, "committed after retry", key(h, "t/k"), []byte("v"))
			},
		},
	}
}
