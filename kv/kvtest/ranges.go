package kvtest

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: API = api-c.rst / api-common.rst.inc (release-7.3,
// fdb_transaction_get_range: begin inclusive, end exclusive, limit, reverse);
// RYW = fdbclient/ReadYourWrites.actor.cpp getRange ('RYW range inverted':
// begin >= end returns an empty result); FDBTypes.h KeyRangeRef (inverted_range
// when begin > end) and fdb_c.cpp fdb_transaction_add_conflict_range.

type rangeRow struct {
	name       string
	begin, end string
	opts       kv.RangeOptions
	want       []string // suffix, value pairs
}

func rangeRows() []rangeRow {
	return []rangeRow{
		{"end-exclusive", "q/a", "q/c", kv.RangeOptions{}, []string{"q/a", "1", "q/b", "2"}},
		{"begin-inclusive-between-keys", "q/a\x00", "q/d", kv.RangeOptions{}, []string{"q/b", "2", "q/c", "3"}},
		{"limit", "q/", "q0", kv.RangeOptions{Limit: 2}, []string{"q/a", "1", "q/b", "2"}},
		{"limit-larger-than-range", "q/", "q0", kv.RangeOptions{Limit: 10}, []string{"q/a", "1", "q/b", "2", "q/c", "3", "q/d", "4"}},
		{"reverse", "q/", "q0", kv.RangeOptions{Reverse: true}, []string{"q/d", "4", "q/c", "3", "q/b", "2", "q/a", "1"}},
		{"limit-reverse", "q/", "q0", kv.RangeOptions{Limit: 2, Reverse: true}, []string{"q/d", "4", "q/c", "3"}},
		{"limit-reverse-end-exclusive", "q/a", "q/d", kv.RangeOptions{Limit: 1, Reverse: true}, []string{"q/c", "3"}},
		{"empty-range", "q/b", "q/b", kv.RangeOptions{}, nil},
		{"no-keys-in-range", "q/b\x00", "q/c", kv.RangeOptions{}, nil},
		{"inverted", "q/d", "q/a", kv.RangeOptions{}, nil},
		{"inverted-reverse", "q/d", "q/a", kv.RangeOptions{Reverse: true, Limit: 1}, nil},
	}
}

func rangeCases() []Case {
	var cases []Case
	for _, r := range rangeRows() {
		cases = append(cases, Case{
			Name: "range/" + r.name,
			Rule: fmt.Sprintf("GetRange [%q, %q) with limit %d, reverse %v returns the pairs with begin <= key < end in order (descending with reverse, the last ones with limit+reverse); begin >= end gives an empty result, not an error (API get_range; RYW getRange 'range inverted'). GetSliceWithError and Iterator agree.", r.begin, r.end, r.opts.Limit, r.opts.Reverse),
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "q/a", "1", "q/b", "2", "q/c", "3", "q/d", "4"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				kvs, err := tr.GetRange(rng(h, r.begin, r.end), r.opts).GetSliceWithError()
				if err := expectNoErr("GetSliceWithError", err); err != nil {
					return err
				}
				if err := expectPairs(h, "GetSliceWithError", kvs, r.want...); err != nil {
					return err
				}
				var got []kv.KeyValue
				it := tr.GetRange(rng(h, r.begin, r.end), r.opts).Iterator()
				for it.Advance() {
					p, err := it.Get()
					if err != nil {
						return expectNoErr("Iterator", err)
					}
					got = append(got, p)
				}
				return expectPairs(h, "Iterator", got, r.want...)
			},
		})
	}
	return append(cases,
		Case{
			Name: "range/iterator-matches-slice-large",
			Rule: "Iterator and GetSliceWithError return the same pairs for a range larger than one fetch batch, forward and reverse (Go binding RangeResult: the iterator fetches in batches).",
			Run: func(ctx context.Context, h Harness) error {
				const n = 1500
				if err := commitWith(h, func(tr kv.Transaction) {
					for i := 0; i < n; i++ {
						tr.Set(key(h, fmt.Sprintf("q/%05d", i)), []byte(fmt.Sprint(i)))
					}
				}); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				for _, opts := range []kv.RangeOptions{{}, {Reverse: true}, {Limit: 1200}, {Limit: 1200, Reverse: true}} {
					slice, err := tr.GetRange(rng(h, "q/", "q0"), opts).GetSliceWithError()
					if err := expectNoErr("GetSliceWithError", err); err != nil {
						return err
					}
					want := n
					if opts.Limit > 0 {
						want = opts.Limit
					}
					if len(slice) != want {
						return fmt.Errorf("%+v: GetSliceWithError returned %d pairs, want %d", opts, len(slice), want)
					}
					it := tr.GetRange(rng(h, "q/", "q0"), opts).Iterator()
					i := 0
					for it.Advance() {
						p, err := it.Get()
						if err != nil {
							return expectNoErr("Iterator", err)
						}
						if i >= len(slice) || string(p.Key) != string(slice[i].Key) || string(p.Value) != string(slice[i].Value) {
							return fmt.Errorf("%+v: Iterator pair %d = %s differs from GetSliceWithError", opts, i, showPairs(h, []kv.KeyValue{p}))
						}
						i++
					}
					if i != len(slice) {
						return fmt.Errorf("%+v: Iterator gave %d pairs, GetSliceWithError %d", opts, i, len(slice))
					}
					first, last := 0, n-1
					if opts.Reverse {
						first, last = n-1, n-want
					} else {
						last = want - 1
					}
					if string(slice[0].Key) != string(key(h, fmt.Sprintf("q/%05d", first))) || string(slice[len(slice)-1].Key) != string(key(h, fmt.Sprintf("q/%05d", last))) {
						return fmt.Errorf("%+v: range runs %s..%s, want q/%05d..q/%05d", opts, show(slice[0].Key), show(slice[len(slice)-1].Key), first, last)
					}
				}
				return nil
			},
		},
		Case{
			Name: "range/nil-vs-empty-value",
			Rule: "Get of a missing key returns nil; Get of a key set to the empty value returns a non-nil empty slice, and range reads return it (API fdb_future_get_value: present flag separate from the value; kv.ReadTransaction.Get).",
			Run: func(ctx context.Context, h Harness) error {
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(key(h, "q/empty"), []byte{}) }); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				v, err := get(tr, key(h, "q/missing"))
				if err := expectNoErr("Get missing", err); err != nil {
					return err
				}
				if v != nil {
					return fmt.Errorf("Get of a missing key = %s, want nil", show(v))
				}
				v, err = get(tr, key(h, "q/empty"))
				if err := expectNoErr("Get empty", err); err != nil {
					return err
				}
				if v == nil || len(v) != 0 {
					return fmt.Errorf("Get of a key set to the empty value = %s, want a non-nil empty slice", show(v))
				}
				// The same inside the transaction that wrote it.
				tr.Set(key(h, "q/empty2"), nil)
				v, err = get(tr, key(h, "q/empty2"))
				if err := expectNoErr("Get own empty", err); err != nil {
					return err
				}
				if v == nil || len(v) != 0 {
					return fmt.Errorf("Get of a key the transaction set to an empty value = %s, want a non-nil empty slice", show(v))
				}
				kvs, err := tr.GetRange(rng(h, "q/", "q0"), kv.RangeOptions{}).GetSliceWithError()
				if err := expectNoErr("GetRange", err); err != nil {
					return err
				}
				return expectPairs(h, "GetRange", kvs, "q/empty", "", "q/empty2", "")
			},
		},
		Case{
			Name: "range/inverted-conflict-range",
			Rule: "AddReadConflictRange and AddWriteConflictRange with begin > end fail with 2005 inverted_range (FDBTypes.h KeyRangeRef; fdb_c.cpp fdb_transaction_add_conflict_range returns the error).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				err = tr.AddReadConflictRange(rng(h, "q/b", "q/a"))
				if err := expectCode("AddReadConflictRange(b, a)", err, kv.ErrInvertedRange); err != nil {
					return err
				}
				err = tr.AddWriteConflictRange(rng(h, "q/b", "q/a"))
				return expectCode("AddWriteConflictRange(b, a)", err, kv.ErrInvertedRange)
			},
		},
	)
}
