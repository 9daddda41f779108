package kvtest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// The expected values below were derived by hand from FDB's own
// implementation of each operation, fdbclient/include/fdbclient/Atomic.h
// (release-7.3: doLittleEndianAdd, doAndV2, doOr, doXor, doAppendIfFits,
// doMax, doMinV2, doByteMax, doByteMin, doCompareAndClear; API >= 510 maps
// Min and And to MinV2 and AndV2), and api-common.rst.inc (the atomic-*
// blurbs: integers are little-endian; a shorter existing value is extended
// with zeros and a longer one truncated to the parameter's length).

type atomicRow struct {
	name     string
	existing []byte // nil: the key is missing
	param    []byte
	want     []byte // nil: the key is absent afterwards
}

type atomicSpec struct {
	op   kv.MutationType
	rule string
	// apply issues the operation; nil means tr.Atomic(op, ...).
	apply func(tr kv.Transaction, k, param []byte)
	rows  []atomicRow
}

func atomicSpecs() []atomicSpec {
	big := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	return []atomicSpec{
		{
			op:    kv.MutationAdd,
			rule:  "Add: little-endian addition with carry; the result has the parameter's length (a missing or empty value counts as zero, a longer one is truncated, overflow wraps) (Atomic.h doLittleEndianAdd).",
			apply: func(tr kv.Transaction, k, p []byte) { tr.Add(k, p) },
			rows: []atomicRow{
				{"missing", nil, le(5, 0, 0, 0), le(5, 0, 0, 0)},
				{"simple", le(1, 0, 0, 0), le(2, 0, 0, 0), le(3, 0, 0, 0)},
				{"carry", le(0xff, 0, 0, 0), le(1, 0, 0, 0), le(0, 1, 0, 0)},
				{"existing-shorter", le(0xff), le(1, 0), le(0, 1)},
				{"existing-longer", le(1, 2, 3, 4), le(1), le(2)},
				{"wraps", le(0xff, 0xff), le(1, 0), le(0, 0)},
				{"existing-empty", []byte{}, le(7), le(7)},
			},
		},
		{
			op:   kv.MutationBitAnd,
			rule: "BitAnd: a missing key takes the parameter; otherwise bytewise AND over the parameter's length, the existing value zero-extended or truncated (Atomic.h doAndV2).",
			rows: []atomicRow{
				{"missing", nil, le(0x0f), le(0x0f)},
				{"simple", le(0xff, 0xf0), le(0x3c, 0xff), le(0x3c, 0xf0)},
				{"existing-shorter", le(0xff), le(0xff, 0xff), le(0xff, 0x00)},
				{"existing-longer", le(0xff, 0xff, 0xff), le(0x0f), le(0x0f)},
			},
		},
		{
			op:   kv.MutationBitOr,
			rule: "BitOr: bytewise OR over the parameter's length, the existing value zero-extended or truncated; a missing key takes the parameter (Atomic.h doOr).",
			rows: []atomicRow{
				{"missing", nil, le(0x0f), le(0x0f)},
				{"existing-longer", le(0x01, 0x10), le(0x02), le(0x03)},
				{"existing-shorter", le(0x01), le(0x02, 0x04), le(0x03, 0x04)},
			},
		},
		{
			op:   kv.MutationBitXor,
			rule: "BitXor: bytewise XOR over the parameter's length, the existing value zero-extended or truncated; a missing key takes the parameter (Atomic.h doXor).",
			rows: []atomicRow{
				{"missing", nil, le(0x0f), le(0x0f)},
				{"simple", le(0xff, 0x00), le(0x0f, 0x0f), le(0xf0, 0x0f)},
				{"existing-longer", le(0xff, 0xff), le(0x01), le(0xfe)},
				{"existing-shorter", le(0x01), le(0x01, 0x02), le(0x00, 0x02)},
			},
		},
		{
			op:    kv.MutationMax,
			rule:  "Max: the larger of the two as little-endian unsigned integers of the parameter's length (existing zero-extended or truncated first); a missing key takes the parameter (Atomic.h doMax).",
			apply: func(tr kv.Transaction, k, p []byte) { tr.Max(k, p) },
			rows: []atomicRow{
				{"missing", nil, le(3, 0), le(3, 0)},
				{"existing-larger", le(5, 0), le(3, 0), le(5, 0)},
				{"param-larger", le(3, 0), le(5, 0), le(5, 0)},
				{"little-endian", le(0, 1), le(0xff, 0), le(0, 1)},
				{"existing-shorter-smaller", le(0xff), le(0, 1), le(0, 1)},
				{"existing-shorter-larger", le(0xff), le(1, 0), le(0xff, 0)},
				{"existing-longer-truncated", le(1, 0, 1), le(2, 0), le(2, 0)},
				{"existing-longer-kept-truncated", le(5, 0, 1), le(2, 0), le(5, 0)},
			},
		},
		{
			op:    kv.MutationMin,
			rule:  "Min: the smaller of the two as little-endian unsigned integers of the parameter's length (existing zero-extended or truncated first); a missing key takes the parameter (Atomic.h doMinV2).",
			apply: func(tr kv.Transaction, k, p []byte) { tr.Min(k, p) },
			rows: []atomicRow{
				{"missing", nil, le(3, 0), le(3, 0)},
				{"existing-larger", le(5, 0), le(3, 0), le(3, 0)},
				{"param-larger", le(3, 0), le(5, 0), le(3, 0)},
				{"little-endian", le(0, 1), le(0xff, 0), le(0xff, 0)},
				{"existing-shorter", le(1), le(0, 1), le(1, 0)},
				{"existing-longer-truncated", le(1, 0, 1), le(2, 0), le(1, 0)},
				{"existing-empty", []byte{}, le(5, 0), le(0, 0)},
			},
		},
		{
			op:   kv.MutationByteMax,
			rule: "ByteMax: the lexicographically larger byte string; a missing key takes the parameter (Atomic.h doByteMax).",
			rows: []atomicRow{
				{"missing", nil, []byte("abc"), []byte("abc")},
				{"param-larger", []byte("abc"), []byte("abd"), []byte("abd")},
				{"existing-larger", []byte("b"), []byte("abc"), []byte("b")},
				{"existing-empty", []byte{}, []byte("a"), []byte("a")},
			},
		},
		{
			op:   kv.MutationByteMin,
			rule: "ByteMin: the lexicographically smaller byte string; a missing key takes the parameter (Atomic.h doByteMin).",
			rows: []atomicRow{
				{"missing", nil, []byte("abd"), []byte("abd")},
				{"existing-smaller", []byte("abc"), []byte("abd"), []byte("abc")},
				{"param-smaller", []byte("b"), []byte("abc"), []byte("abc")},
				{"prefix-smaller", []byte("ab"), []byte("abc"), []byte("ab")},
			},
		},
		{
			op:    kv.MutationCompareAndClear,
			rule:  "CompareAndClear: clears the key if its value equals the parameter, otherwise leaves it; a missing key stays missing (Atomic.h doCompareAndClear).",
			apply: func(tr kv.Transaction, k, p []byte) { tr.CompareAndClear(k, p) },
			rows: []atomicRow{
				{"missing", nil, []byte("x"), nil},
				{"equal", []byte("x"), []byte("x"), nil},
				{"different", []byte("x"), []byte("y"), []byte("x")},
				{"prefix-not-equal", []byte("xy"), []byte("x"), []byte("xy")},
			},
		},
		{
			op:   kv.MutationAppendIfFits,
			rule: "AppendIfFits: appends the parameter unless the result would exceed 100,000 bytes, in which case the value is unchanged (Atomic.h doAppendIfFits).",
			rows: []atomicRow{
				{"missing", nil, []byte("ab"), []byte("ab")},
				{"append", []byte("ab"), []byte("cd"), []byte("abcd")},
				{"exactly-fits", big(99_998, 'a'), []byte("bc"), append(big(99_998, 'a'), "bc"...)},
				{"does-not-fit", big(99_999, 'a'), []byte("bc"), big(99_999, 'a')},
			},
		},
	}
}

func atomicCases() []Case {
	var cases []Case
	for _, spec := range atomicSpecs() {
		cases = append(cases,
			Case{
				Name: "atomic/" + spec.op.String() + "/committed",
				Rule: spec.rule + " Applied at commit.",
				Run: func(ctx context.Context, h Harness) error {
					return runAtomic(h, spec, false)
				},
			},
			Case{
				Name: "atomic/" + spec.op.String() + "/ryw",
				Rule: spec.rule + " The transaction's own reads see the result before commit (RYW: WriteMap applies atomic ops to reads).",
				Run: func(ctx context.Context, h Harness) error {
					return runAtomic(h, spec, true)
				},
			})
	}
	return cases
}

// runAtomic seeds every row's existing value, applies the operations in one
// transaction, and checks either the transaction's own reads (ryw) or the
// committed result read by a new transaction.
func runAtomic(h Harness, spec atomicSpec, ryw bool) error {
	rowKey := func(r atomicRow) []byte { return key(h, "a/"+r.name) }
	if err := commitWith(h, func(tr kv.Transaction) {
		for _, r := range spec.rows {
			if r.existing != nil {
				tr.Set(rowKey(r), r.existing)
			}
		}
	}); err != nil {
		return fmt.Errorf("seeding: %w", err)
	}
	tr, err := newTx(h)
	if err != nil {
		return err
	}
	for _, r := range spec.rows {
		if spec.apply != nil {
			spec.apply(tr, rowKey(r), r.param)
		} else {
			tr.Atomic(spec.op, rowKey(r), r.param)
		}
	}
	describe := func(r atomicRow) string {
		return fmt.Sprintf("%s row %q (existing %s, param %s)", spec.op, r.name, show(r.existing), show(r.param))
	}
	if ryw {
		for _, r := range spec.rows {
			v, err := get(tr, rowKey(r))
			if err != nil {
				return fmt.Errorf("%s: own read: %w", describe(r), err)
			}
			if err := expectValue(describe(r)+" read in its transaction", v, r.want); err != nil {
				return err
			}
		}
		return nil
	}
	if err := tr.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", spec.op, err)
	}
	for _, r := range spec.rows {
		if err := expectStored(h, describe(r)+" after commit", rowKey(r), r.want); err != nil {
			return err
		}
	}
	return nil
}
