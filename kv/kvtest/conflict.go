package kvtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources cited below:
//   DG   documentation/sphinx/source/developer-guide.rst (release-7.3)
//   RYW  fdbclient/ReadYourWrites.actor.cpp (release-7.3)
//   FACT /work/shared/fdb-facts.md (measured on FDB 7.3)

func conflictCases() []Case {
	return []Case{
		{
			Name: "conflict/point/read-then-write",
			Rule: "A serializable read of a key conflicts with a write to it committed after the read version: commit fails 1020 (DG 'How FoundationDB Detects Conflicts').",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				return expectConflict(h, readPoint(h, "d/k"), setKey(h, "d/k", "v1"))
			},
		},
		{
			Name: "conflict/point/missing-key",
			Rule: "Reading a missing key conflicts with a later committed insert of it (DG: a write to any key read, present or not, between read and commit version).",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, readPoint(h, "d/k"), setKey(h, "d/k", "new"))
			},
		},
		{
			Name: "conflict/point/write-before-read-version",
			Rule: "A write committed before the reader's read version does not conflict (DG: only writes between read version and commit version conflict).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				if err := seed(h, "d/k", "v1"); err != nil { // committed before txA exists
					return err
				}
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				v, err := get(txA, key(h, "d/k"))
				if err != nil {
					return expectNoErr("txA read", err)
				}
				if err := expectValue("txA read", v, []byte("v1")); err != nil {
					return err
				}
				txA.Set(key(h, "d/k"), []byte("v2"))
				if err := txA.Commit(); err != nil {
					return fmt.Errorf("txA commit: got %v, want success (the other write preceded its read version)", err)
				}
				return expectStored(h, "final value", key(h, "d/k"), []byte("v2"))
			},
		},
		{
			Name: "conflict/point/snapshot-read",
			Rule: "Snapshot reads add no read-conflict range, so a later committed write to the key does not conflict (DG 'Snapshot reads').",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				return expectNoConflict(h, func(tr kv.Transaction) error {
					v, err := get(tr.Snapshot(), key(h, "d/k"))
					if err != nil {
						return err
					}
					return expectValue("snapshot read", v, []byte("v0"))
				}, setKey(h, "d/k", "v1"))
			},
		},
		{
			Name: "conflict/range/snapshot",
			Rule: "A snapshot range read adds no read-conflict range: inserts and updates in it do not conflict (DG 'Snapshot reads').",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/a", "1", "d/c", "3"); err != nil {
					return err
				}
				return expectNoConflict(h, func(tr kv.Transaction) error {
					_, err := tr.Snapshot().GetRange(rng(h, "d/", "d0"), kv.RangeOptions{}).GetSliceWithError()
					return err
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/b"), []byte("2"))
					tr.Set(key(h, "d/c"), []byte("33"))
					return nil
				})
			},
		},
		{
			Name: "conflict/range/full-update",
			Rule: "A full range read conflicts with a later committed update of a key it returned (DG 'Conflict ranges').",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/a", "1", "d/c", "3"); err != nil {
					return err
				}
				return expectConflict(h, readRangeStep(h, "d/a", "d/z", kv.RangeOptions{}), setKey(h, "d/c", "33"))
			},
		},
		{
			Name: "conflict/range/full-insert-gap",
			Rule: "A full range read conflicts on the whole requested range, so inserting a key that did not exist between returned keys conflicts (DG 'Snapshot reads': an insert anywhere in the range conflicts).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/a", "1", "d/c", "3"); err != nil {
					return err
				}
				return expectConflict(h, readRangeStep(h, "d/a", "d/z", kv.RangeOptions{}), setKey(h, "d/b", "2"))
			},
		},
		{
			Name: "conflict/range/full-insert-tail",
			Rule: "A full range read conflicts up to its requested end, past the last key returned: an insert there conflicts (RYW addConflictRange: rangeEnd = read.end when the read is not limited).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/a", "1", "d/c", "3"); err != nil {
					return err
				}
				return expectConflict(h, readRangeStep(h, "d/a", "d/z", kv.RangeOptions{}), setKey(h, "d/x", "new"))
			},
		},
		{
			Name: "conflict/range/full-insert-empty",
			Rule: "A range read that returned nothing still conflicts with an insert into the requested range (DG 'Conflict ranges'; RYW addConflictRange).",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, readRangeStep(h, "d/a", "d/z", kv.RangeOptions{}), setKey(h, "d/m", "new"))
			},
		},
		{
			Name: "conflict/range/outside",
			Rule: "A range read's conflict range is [begin, end): writes at the exclusive end key or before begin do not conflict (RYW addConflictRange: KeyRangeRef(read.begin, read.end)).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/b", "1", "d/c", "3"); err != nil {
					return err
				}
				return expectNoConflict(h, readRangeStep(h, "d/b", "d/d", kv.RangeOptions{}), func(tr kv.Transaction) error {
					tr.Set(key(h, "d/d"), []byte("end key"))
					tr.Set(key(h, "d/a"), []byte("before begin"))
					return nil
				})
			},
		},
		{
			Name: "conflict/range/limited-forward-past-last",
			Rule: "A forward range read stopped by its limit conflicts only on [begin, keyAfter(last key returned)): an insert just past the last key, or a write to a later key not returned, does not conflict (RYW addConflictRange for GetRangeReq<false>; FACT measured).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3", "d/k4", "4"); err != nil {
					return err
				}
				return expectNoConflict(h, func(tr kv.Transaction) error {
					kvs, err := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
					if err != nil {
						return err
					}
					return expectPairs(h, "limited read", kvs, "d/k1", "1", "d/k2", "2")
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/k2\x00"), []byte("just past the last key returned"))
					tr.Set(key(h, "d/k2a"), []byte("past"))
					tr.Set(key(h, "d/k3"), []byte("33"))
					return nil
				})
			},
		},
		{
			Name: "conflict/range/limited-forward-before-last",
			Rule: "A forward range read stopped by its limit conflicts on the part it read: an insert between begin and the last key returned conflicts (RYW addConflictRange; FACT measured).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3", "d/k4", "4"); err != nil {
					return err
				}
				return expectConflict(h, func(tr kv.Transaction) error {
					_, err := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
					return err
				}, setKey(h, "d/k1a", "inside what was read"))
			},
		},
		{
			Name: "conflict/range/limited-forward-last-key",
			Rule: "A limited forward read's conflict range includes the last key returned itself (RYW addConflictRange: end = keyAfter(last key)).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3"); err != nil {
					return err
				}
				return expectConflict(h, func(tr kv.Transaction) error {
					_, err := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
					return err
				}, setKey(h, "d/k2", "22"))
			},
		},
		{
			Name: "conflict/range/limited-reverse-before-last",
			Rule: "A reverse range read stopped by its limit conflicts only from the last (smallest) key returned to the end: a write before that key does not conflict (RYW addConflictRange for GetRangeReq<true>; FACT measured).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3", "d/k4", "4"); err != nil {
					return err
				}
				return expectNoConflict(h, func(tr kv.Transaction) error {
					kvs, err := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{Limit: 2, Reverse: true}).GetSliceWithError()
					if err != nil {
						return err
					}
					return expectPairs(h, "limited reverse read", kvs, "d/k4", "4", "d/k3", "3")
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/k2a"), []byte("just before the last key returned"))
					tr.Set(key(h, "d/k2"), []byte("22"))
					tr.Set(key(h, "d/a"), []byte("near begin"))
					return nil
				})
			},
		},
		{
			Name: "conflict/range/limited-reverse-after-last",
			Rule: "A limited reverse read conflicts on [last key returned, end): inserts there, including past the first key returned, conflict (RYW addConflictRange for GetRangeReq<true>; FACT measured).",
			Run: func(ctx context.Context, h Harness) error {
				// Each write runs in its own subspace d<i>/ so that earlier
				// inserts do not change what the next read returns.
				for i, ins := range []string{"k3a", "k3", "z"} {
					sub := fmt.Sprintf("d%d/", i)
					if err := seed(h, sub+"k1", "1", sub+"k2", "2", sub+"k3", "3", sub+"k4", "4"); err != nil {
						return err
					}
					err := expectConflict(h, func(tr kv.Transaction) error {
						kvs, err := tr.GetRange(rng(h, sub, sub+"\xff"), kv.RangeOptions{Limit: 2, Reverse: true}).GetSliceWithError()
						if err != nil {
							return err
						}
						return expectPairs(h, "limited reverse read", kvs, sub+"k4", "4", sub+"k3", "3")
					}, setKey(h, sub+ins, "new"))
					if err != nil {
						return fmt.Errorf("write to %q: %w", sub+ins, err)
					}
				}
				return nil
			},
		},
		{
			Name: "conflict/range/iterator-partial",
			Rule: "A range read consumed partly through its iterator conflicts at least on the part consumed (kv.RangeResult: the conflict range covers what was fetched; Go binding fetches lazily in batches).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3", "d/k4", "4", "d/k5", "5"); err != nil {
					return err
				}
				return expectConflict(h, func(tr kv.Transaction) error {
					it := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{}).Iterator()
					for i := 0; i < 2; i++ {
						if !it.Advance() {
							return fmt.Errorf("iterator ended after %d pairs, want at least 2", i)
						}
						if _, err := it.Get(); err != nil {
							return err
						}
					}
					return nil
				}, setKey(h, "d/k1a", "inside the consumed part"))
			},
		},
		{
			Name: "conflict/clear-range",
			Rule: "A ClearRange by another transaction writes its whole range, so it conflicts with a read of a key in it (DG: a write to a key read; clear adds a write-conflict range over the cleared range).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k2", "2", "d/k3", "3"); err != nil {
					return err
				}
				return expectConflict(h, readPoint(h, "d/k2"), func(tr kv.Transaction) error {
					tr.ClearRange(rng(h, "d/k1", "d/k3"))
					return nil
				})
			},
		},
		{
			Name: "conflict/clear-range-missing-key",
			Rule: "A ClearRange conflicts with a read of a missing key inside it: the write-conflict range is the whole cleared range, not only the keys that existed (RYW clear: write conflict on the range).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k1", "1", "d/k3", "3"); err != nil {
					return err
				}
				return expectConflict(h, readPoint(h, "d/k2"), func(tr kv.Transaction) error {
					tr.ClearRange(rng(h, "d/k1", "d/k9"))
					return nil
				})
			},
		},
		{
			Name: "conflict/clear-key",
			Rule: "Clearing a key another transaction read conflicts like any write (DG: conflicts are writes to keys read).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v"); err != nil {
					return err
				}
				return expectConflict(h, readPoint(h, "d/k"), func(tr kv.Transaction) error {
					tr.Clear(key(h, "d/k"))
					return nil
				})
			},
		},
		{
			Name: "conflict/explicit/read-key",
			Rule: "AddReadConflictKey acts as if the transaction had read the key: a later committed write to it conflicts (DG 'Conflict ranges'; api-c fdb_transaction_add_conflict_range).",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					return tr.AddReadConflictKey(key(h, "d/k"))
				}, setKey(h, "d/k", "v"))
			},
		},
		{
			Name: "conflict/explicit/read-range",
			Rule: "AddReadConflictRange acts as if the transaction had read the range: a committed insert inside it conflicts (DG 'Conflict ranges').",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					return tr.AddReadConflictRange(rng(h, "d/a", "d/m"))
				}, setKey(h, "d/f", "v"))
			},
		},
		{
			Name: "conflict/explicit/read-range-outside",
			Rule: "An explicit read-conflict range is half-open [begin, end): writes at end or outside do not conflict (DG 'Conflict ranges'; KeyRangeRef).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNoConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					return tr.AddReadConflictRange(rng(h, "d/b", "d/m"))
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/m"), []byte("end"))
					tr.Set(key(h, "d/a"), []byte("before"))
					return nil
				})
			},
		},
		{
			Name: "conflict/explicit/read-key-lazy-read-version",
			Rule: "The read version is taken lazily at the first read: a read-conflict key added before any read does not conflict with a write committed before that first read (DG: read version assigned at the first read; FACT measured on FDB 7.3).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNoConflict(h, func(tr kv.Transaction) error {
					return tr.AddReadConflictKey(key(h, "d/k"))
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/k"), []byte("v"))
					return nil
				})
				// interleave commits txA without any read, so its read version
				// is taken after txB committed.
			},
		},
		{
			Name: "conflict/explicit/read-key-lazy-then-read",
			Rule: "With a conflict key added before the first read, the first read (after another commit) sets the read version, and that earlier commit does not conflict (FACT measured on FDB 7.3).",
			Run: func(ctx context.Context, h Harness) error {
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				if err := txA.AddReadConflictKey(key(h, "d/k")); err != nil {
					return expectNoErr("AddReadConflictKey", err)
				}
				if err := seed(h, "d/k", "v"); err != nil {
					return err
				}
				if _, err := get(txA, key(h, "d/other")); err != nil {
					return expectNoErr("txA first read", err)
				}
				txA.Set(marker(h), []byte("A"))
				if err := txA.Commit(); err != nil {
					return fmt.Errorf("txA commit: got %v, want success (the write preceded txA's read version)", err)
				}
				return nil
			},
		},
		{
			Name: "conflict/explicit/write-key",
			Rule: "AddWriteConflictKey makes other transactions that read the key conflict, as if it had been written (DG 'Conflict ranges').",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, readPoint(h, "d/k"), func(tr kv.Transaction) error {
					tr.Set(key(h, "e/unrelated"), []byte("x"))
					return tr.AddWriteConflictKey(key(h, "d/k"))
				})
			},
		},
		{
			Name: "conflict/explicit/write-range",
			Rule: "AddWriteConflictRange makes readers of any key in the range conflict (DG 'Conflict ranges').",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, readPoint(h, "d/k5"), func(tr kv.Transaction) error {
					tr.Set(key(h, "e/unrelated"), []byte("x"))
					return tr.AddWriteConflictRange(rng(h, "d/k1", "d/k9"))
				})
			},
		},
		{
			Name: "conflict/blind-writes",
			Rule: "Blind writes never conflict: two transactions writing the same key without reading it both commit, the later commit wins (DG 'How FoundationDB Detects Conflicts': write-only transactions never conflict).",
			Run: func(ctx context.Context, h Harness) error {
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := grv(txA); err != nil { // read version before txB commits
					return expectNoErr("txA GetReadVersion", err)
				}
				txA.Set(key(h, "d/k"), []byte("A"))
				if err := seed(h, "d/k", "B"); err != nil {
					return err
				}
				if err := txA.Commit(); err != nil {
					return fmt.Errorf("txA blind-write commit: got %v, want success", err)
				}
				return expectStored(h, "final value", key(h, "d/k"), []byte("A"))
			},
		},
		{
			Name: "conflict/write-write",
			Rule: "Writes never conflict with writes: a transaction that read other keys and wrote k commits although k was written concurrently (DG: the resolver does not use the write set to decide).",
			Run: func(ctx context.Context, h Harness) error {
				if err := expectNoConflict(h, func(tr kv.Transaction) error {
					if _, err := get(tr, key(h, "d/other")); err != nil {
						return err
					}
					tr.Set(key(h, "d/k"), []byte("A"))
					return nil
				}, setKey(h, "d/k", "B")); err != nil {
					return err
				}
				return expectStored(h, "final value", key(h, "d/k"), []byte("A"))
			},
		},
		{
			Name: "conflict/atomic-add-concurrent",
			Rule: "Atomic operations add no read conflict: two concurrent Adds on one key both commit and the value is their sum (DG 'Atomic operations'; RYW atomicOp adds no read conflict).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "d/counter")
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(k, le(10, 0, 0, 0, 0, 0, 0, 0)) }); err != nil {
					return err
				}
				if err := expectNoConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					tr.Add(k, le(1, 0, 0, 0, 0, 0, 0, 0))
					return nil
				}, func(tr kv.Transaction) error {
					tr.Add(k, le(2, 0, 0, 0, 0, 0, 0, 0))
					return nil
				}); err != nil {
					return err
				}
				return expectStored(h, "counter", k, le(13, 0, 0, 0, 0, 0, 0, 0))
			},
		},
		{
			Name: "conflict/ryw-own-write",
			Rule: "Reading a key the transaction itself wrote first adds no read conflict (RYW updateConflictMap: only unmodified ranges; DG note on add read conflict range).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNoConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					tr.Set(key(h, "d/k"), []byte("mine"))
					v, err := get(tr, key(h, "d/k"))
					if err != nil {
						return err
					}
					return expectValue("own write", v, []byte("mine"))
				}, setKey(h, "d/k", "theirs"))
			},
		},
		{
			Name: "conflict/ryw-own-write-range",
			Rule: "A range read over keys the transaction cleared and rewrote first adds no read conflict on that part (RYW updateConflictMap skips modified ranges).",
			Run: func(ctx context.Context, h Harness) error {
				return expectNoConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					tr.ClearRange(rng(h, "d/", "d0"))
					tr.Set(key(h, "d/a"), []byte("mine"))
					kvs, err := tr.GetRange(rng(h, "d/", "d0"), kv.RangeOptions{}).GetSliceWithError()
					if err != nil {
						return err
					}
					return expectPairs(h, "range over own writes", kvs, "d/a", "mine")
				}, setKey(h, "d/b", "theirs"))
			},
		},
		{
			Name: "conflict/read-only-commit",
			Rule: "A read-only transaction's commit never fails, whatever was written concurrently, and its committed version is -1 (DG: read-only transactions never conflict; api-c fdb_transaction_get_committed_version).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := get(txA, key(h, "d/k")); err != nil {
					return expectNoErr("txA read", err)
				}
				if err := seed(h, "d/k", "v1"); err != nil {
					return err
				}
				if err := txA.Commit(); err != nil {
					return fmt.Errorf("read-only commit: got %v, want success", err)
				}
				cv, err := txA.GetCommittedVersion()
				if err != nil {
					return expectNoErr("GetCommittedVersion", err)
				}
				if cv != -1 {
					return fmt.Errorf("read-only GetCommittedVersion = %d, want -1", cv)
				}
				return nil
			},
		},
		{
			Name: "conflict/watch-reads-key",
			Rule: "Creating a watch performs a serializable read of the key, so the watching transaction conflicts with a concurrent write to it (RYW watch(): readWithConflictRange(..., Snapshot::False)).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				var w kv.Watch
				defer func() {
					if w != nil {
						w.Cancel()
					}
				}()
				return expectConflict(h, func(tr kv.Transaction) error {
					if _, err := grv(tr); err != nil {
						return err
					}
					w = tr.Watch(key(h, "d/k"))
					return nil
				}, setKey(h, "d/k", "v1"))
			},
		},
		{
			Name: "conflict/commit-after-conflict-applies-nothing",
			Rule: "A transaction that fails with 1020 applies none of its writes (DG: rejected transactions are not applied).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "d/k", "v0"); err != nil {
					return err
				}
				cerr, err := interleave(h, func(tr kv.Transaction) error {
					if _, err := get(tr, key(h, "d/k")); err != nil {
						return err
					}
					tr.Set(key(h, "d/a-write"), []byte("A"))
					tr.ClearRange(rng(h, "e/", "e0"))
					return nil
				}, func(tr kv.Transaction) error {
					tr.Set(key(h, "d/k"), []byte("v1"))
					tr.Set(key(h, "e/1"), []byte("B"))
					return nil
				})
				if err != nil {
					return err
				}
				if !errors.Is(cerr, kv.ErrNotCommitted) {
					return fmt.Errorf("txA commit: got %v, want 1020", cerr)
				}
				if err := expectStored(h, "txA's set", key(h, "d/a-write"), nil); err != nil {
					return err
				}
				if err := expectStored(h, "txA's marker", marker(h), nil); err != nil {
					return err
				}
				return expectStored(h, "key txA cleared", key(h, "e/1"), []byte("B"))
			},
		},
	}
}

// readRangeStep returns a read step that reads [prefix+begin, prefix+end).
func readRangeStep(h Harness, begin, end string, opts kv.RangeOptions) func(kv.Transaction) error {
	return func(tr kv.Transaction) error {
		_, err := tr.GetRange(rng(h, begin, end), opts).GetSliceWithError()
		return err
	}
}
