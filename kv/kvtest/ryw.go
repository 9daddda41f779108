package kvtest

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: DG = developer-guide.rst ('Snapshot reads', read-your-writes);
// RYW = fdbclient/ReadYourWrites.actor.cpp (release-7.3).

func rywCases() []Case {
	return []Case{
		{
			Name: "ryw/get-after-set",
			Rule: "Reads see the transaction's own uncommitted Set (DG: transactions read their own writes by default).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "r/k", "stored"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Set(key(h, "r/k"), []byte("mine"))
				tr.Set(key(h, "r/new"), []byte("fresh"))
				v, err := get(tr, key(h, "r/k"))
				if err := expectNoErr("Get", err); err != nil {
					return err
				}
				if err := expectValue("overwritten key", v, []byte("mine")); err != nil {
					return err
				}
				v, err = get(tr, key(h, "r/new"))
				if err := expectNoErr("Get", err); err != nil {
					return err
				}
				return expectValue("new key", v, []byte("fresh"))
			},
		},
		{
			Name: "ryw/get-after-clear",
			Rule: "A key cleared in the transaction reads as absent (nil) within it (DG read-your-writes).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "r/k", "stored"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Clear(key(h, "r/k"))
				v, err := get(tr, key(h, "r/k"))
				if err := expectNoErr("Get", err); err != nil {
					return err
				}
				return expectValue("cleared key", v, nil)
			},
		},
		{
			Name: "ryw/get-after-clear-range",
			Rule: "Keys in a range cleared in the transaction read as absent, and a Set after the ClearRange is visible (DG read-your-writes; RYW WriteMap applies mutations in order).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "r/a", "1", "r/b", "2", "r/c", "3"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.ClearRange(rng(h, "r/a", "r/c"))
				tr.Set(key(h, "r/b2"), []byte("after clear"))
				for _, c := range []struct {
					k    string
					want []byte
				}{{"r/a", nil}, {"r/b", nil}, {"r/b2", []byte("after clear")}, {"r/c", []byte("3")}} {
					v, err := get(tr, key(h, c.k))
					if err := expectNoErr("Get "+c.k, err); err != nil {
						return err
					}
					if err := expectValue(c.k, v, c.want); err != nil {
						return err
					}
				}
				return nil
			},
		},
		{
			Name: "ryw/set-after-clear",
			Rule: "Set, Clear and Set again of one key in a transaction reads as, and commits, the last Set (DG read-your-writes).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				k := key(h, "r/k")
				tr.Set(k, []byte("1"))
				tr.Clear(k)
				tr.Set(k, []byte("3"))
				v, err := get(tr, k)
				if err := expectNoErr("Get", err); err != nil {
					return err
				}
				if err := expectValue("in tx", v, []byte("3")); err != nil {
					return err
				}
				if err := tr.Commit(); err != nil {
					return expectNoErr("Commit", err)
				}
				return expectStored(h, "committed", k, []byte("3"))
			},
		},
		rywRangeCase("ryw/range-merge", kv.RangeOptions{},
			"r/a", "1", "r/b", "x", "r/b5", "new", "r/d5", "set-in-clear", "r/f", "6"),
		rywRangeCase("ryw/range-merge-limit", kv.RangeOptions{Limit: 3},
			"r/a", "1", "r/b", "x", "r/b5", "new"),
		rywRangeCase("ryw/range-merge-reverse", kv.RangeOptions{Reverse: true},
			"r/f", "6", "r/d5", "set-in-clear", "r/b5", "new", "r/b", "x", "r/a", "1"),
		rywRangeCase("ryw/range-merge-reverse-limit", kv.RangeOptions{Reverse: true, Limit: 2},
			"r/f", "6", "r/d5", "set-in-clear"),
		{
			Name: "ryw/snapshot-sees-own-writes",
			Rule: "Snapshot reads also see the transaction's own writes by default (DG 'Snapshot reads': read-your-writes behaviour is the same for snapshot reads).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "r/a", "1", "r/b", "2"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.Set(key(h, "r/a"), []byte("mine"))
				tr.Clear(key(h, "r/b"))
				tr.Set(key(h, "r/c"), []byte("new"))
				snap := tr.Snapshot()
				v, err := get(snap, key(h, "r/a"))
				if err := expectNoErr("snapshot Get", err); err != nil {
					return err
				}
				if err := expectValue("snapshot Get of own Set", v, []byte("mine")); err != nil {
					return err
				}
				v, err = get(snap, key(h, "r/b"))
				if err := expectNoErr("snapshot Get", err); err != nil {
					return err
				}
				if err := expectValue("snapshot Get of own Clear", v, nil); err != nil {
					return err
				}
				kvs, err := snap.GetRange(rng(h, "r/", "r0"), kv.RangeOptions{}).GetSliceWithError()
				if err := expectNoErr("snapshot GetRange", err); err != nil {
					return err
				}
				return expectPairs(h, "snapshot GetRange", kvs, "r/a", "mine", "r/c", "new")
			},
		},
		{
			Name: "ryw/atomic-stacked",
			Rule: "Atomic operations stack on the transaction's own Set, Clear and earlier atomic operations when it reads the key (RYW WriteMap coalesces operations; Atomic.h semantics).",
			Run: func(ctx context.Context, h Harness) error {
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(key(h, "r/stored"), le(5, 0)) }); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				a, b, c, d := key(h, "r/a"), key(h, "r/b"), key(h, "r/c"), key(h, "r/stored")
				tr.Set(a, le(1, 0))
				tr.Add(a, le(2, 0))
				tr.Add(a, le(0xff, 0))
				tr.Clear(b)
				tr.Add(b, le(7))
				tr.Add(c, le(1, 0))
				tr.Max(c, le(9, 0))
				tr.Add(d, le(1, 0))
				tr.Add(d, le(1, 0))
				tr.Min(d, le(6, 0))
				want := map[string][]byte{"r/a": le(2, 1), "r/b": le(7), "r/c": le(9, 0), "r/stored": le(6, 0)}
				for _, k := range []string{"r/a", "r/b", "r/c", "r/stored"} {
					v, err := get(tr, key(h, k))
					if err := expectNoErr("Get "+k, err); err != nil {
						return err
					}
					if err := expectValue("own read of "+k, v, want[k]); err != nil {
						return err
					}
				}
				if err := tr.Commit(); err != nil {
					return expectNoErr("Commit", err)
				}
				for _, k := range []string{"r/a", "r/b", "r/c", "r/stored"} {
					if err := expectStored(h, "committed "+k, key(h, k), want[k]); err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
}

// rywRangeCase builds a case that merges own writes with stored data in one
// range read. Stored: a b c d e f. The transaction sets b=x, inserts b5,
// clears c, clears [d, f) and sets d5 inside the cleared range.
func rywRangeCase(name string, opts kv.RangeOptions, want ...string) Case {
	return Case{
		Name: name,
		Rule: fmt.Sprintf("GetRange (limit %d, reverse %v) merges the transaction's sets, clears and clear-ranges with stored data, in key order (DG read-your-writes; RYW getRange over RYWIterator).", opts.Limit, opts.Reverse),
		Run: func(ctx context.Context, h Harness) error {
			if err := seed(h, "r/a", "1", "r/b", "2", "r/c", "3", "r/d", "4", "r/e", "5", "r/f", "6"); err != nil {
				return err
			}
			tr, err := newTx(h)
			if err != nil {
				return err
			}
			tr.Set(key(h, "r/b"), []byte("x"))
			tr.Set(key(h, "r/b5"), []byte("new"))
			tr.Clear(key(h, "r/c"))
			tr.ClearRange(rng(h, "r/d", "r/f"))
			tr.Set(key(h, "r/d5"), []byte("set-in-clear"))
			rr := tr.GetRange(rng(h, "r/", "r0"), opts)
			kvs, err := rr.GetSliceWithError()
			if err := expectNoErr("GetRange", err); err != nil {
				return err
			}
			if err := expectPairs(h, "GetSliceWithError", kvs, want...); err != nil {
				return err
			}
			var got []kv.KeyValue
			it := tr.GetRange(rng(h, "r/", "r0"), opts).Iterator()
			for it.Advance() {
				p, err := it.Get()
				if err != nil {
					return expectNoErr("Iterator", err)
				}
				got = append(got, p)
			}
			return expectPairs(h, "Iterator", got, want...)
		},
	}
}
