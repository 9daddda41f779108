package kvtest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: KL = documentation/sphinx/source/known-limitations.rst
// (release-7.3); RYW = fdbclient/ReadYourWrites.actor.cpp (set: key_too_large
// when key.size() > KEY_SIZE_LIMIT, value_too_large when value.size() >
// VALUE_SIZE_LIMIT); NATIVE = fdbclient/NativeAPI.actor.cpp (commit:
// transaction_too_large when mutations + conflict ranges exceed the size
// limit). In FDB the Set errors are deferred: they surface at the next
// operation or at Commit, so the cases check Commit.

// keyOfSize returns a key under the prefix exactly n bytes long.
func keyOfSize(h Harness, tag string, n int) []byte {
	k := key(h, tag)
	if len(k) > n {
		panic("prefix longer than the key size under test")
	}
	return append(k, bytes.Repeat([]byte{'k'}, n-len(k))...)
}

func limitCases() []Case {
	return []Case{
		{
			Name: "limits/key-10000-ok",
			Rule: "A key of exactly 10,000 bytes is allowed (KL: keys cannot exceed 10,000 bytes).",
			Run: func(ctx context.Context, h Harness) error {
				k := keyOfSize(h, "l/", kv.MaxKeySize)
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(k, []byte("v")) }); err != nil {
					return fmt.Errorf("setting a %d-byte key: %w", len(k), err)
				}
				return expectStored(h, "10,000-byte key", k, []byte("v"))
			},
		},
		{
			Name: "limits/key-too-large",
			Rule: "A key of 10,001 bytes fails with 2102 key_too_large and nothing of the transaction is applied (KL; RYW set).",
			Run: func(ctx context.Context, h Harness) error {
				return expectFailedTx(h, kv.ErrKeyTooLarge, func(tr kv.Transaction) {
					tr.Set(keyOfSize(h, "l/", kv.MaxKeySize+1), []byte("v"))
				})
			},
		},
		{
			Name: "limits/key-too-large-atomic",
			Rule: "An atomic operation on a key over 10,000 bytes fails with 2102 key_too_large (RYW atomicOp).",
			Run: func(ctx context.Context, h Harness) error {
				return expectFailedTx(h, kv.ErrKeyTooLarge, func(tr kv.Transaction) {
					tr.Add(keyOfSize(h, "l/", kv.MaxKeySize+1), le(1))
				})
			},
		},
		{
			Name: "limits/value-100000-ok",
			Rule: "A value of exactly 100,000 bytes is allowed (KL: values cannot exceed 100,000 bytes).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "l/v")
				v := bytes.Repeat([]byte{'v'}, kv.MaxValueSize)
				if err := commitWith(h, func(tr kv.Transaction) { tr.Set(k, v) }); err != nil {
					return fmt.Errorf("setting a %d-byte value: %w", len(v), err)
				}
				return expectStored(h, "100,000-byte value", k, v)
			},
		},
		{
			Name: "limits/value-too-large",
			Rule: "A value of 100,001 bytes fails with 2103 value_too_large and nothing of the transaction is applied (KL; RYW set).",
			Run: func(ctx context.Context, h Harness) error {
				return expectFailedTx(h, kv.ErrValueTooLarge, func(tr kv.Transaction) {
					tr.Set(key(h, "l/v"), bytes.Repeat([]byte{'v'}, kv.MaxValueSize+1))
				})
			},
		},
		{
			Name: "limits/transaction-too-large",
			Rule: "A transaction whose mutations exceed 10,000,000 bytes fails at commit with 2101 transaction_too_large and nothing is applied (KL: transactions cannot exceed 10,000,000 bytes of affected data; NATIVE commit).",
			Run: func(ctx context.Context, h Harness) error {
				v := bytes.Repeat([]byte{'x'}, 100_000)
				return expectFailedTx(h, kv.ErrTransactionTooLarge, func(tr kv.Transaction) {
					for i := 0; i < 105; i++ { // 10.5 MB of values
						tr.Set(key(h, fmt.Sprintf("l/big/%03d", i)), v)
					}
				})
			},
		},
		{
			Name: "limits/approximate-size",
			Rule: "GetApproximateSize grows with each mutation by at least its key and value bytes (api-c fdb_transaction_get_approximate_size; RYW set: approximateSize += key + value + overhead).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				size := func() (int64, error) { return tr.GetApproximateSize().Get() }
				s0, err := size()
				if err != nil {
					return expectNoErr("GetApproximateSize", err)
				}
				k1 := key(h, "l/a")
				tr.Set(k1, bytes.Repeat([]byte{'v'}, 1000))
				s1, err := size()
				if err != nil {
					return expectNoErr("GetApproximateSize", err)
				}
				if s1 < s0+1000+int64(len(k1)) {
					return fmt.Errorf("approximate size %d -> %d after setting a %d-byte key to 1,000 bytes", s0, s1, len(k1))
				}
				k2 := key(h, "l/b")
				tr.Set(k2, bytes.Repeat([]byte{'v'}, 5000))
				s2, err := size()
				if err != nil {
					return expectNoErr("GetApproximateSize", err)
				}
				if s2 < s1+5000+int64(len(k2)) {
					return fmt.Errorf("approximate size %d -> %d after setting a %d-byte key to 5,000 bytes", s1, s2, len(k2))
				}
				tr.ClearRange(rng(h, "l/c", "l/d"))
				s3, err := size()
				if err != nil {
					return expectNoErr("GetApproximateSize", err)
				}
				if s3 <= s2 {
					return fmt.Errorf("approximate size did not grow after ClearRange: %d -> %d", s2, s3)
				}
				return nil
			},
		},
	}
}

// expectFailedTx runs f plus a small ordinary write in one transaction,
// requires Commit to fail with want, and checks that nothing was applied.
func expectFailedTx(h Harness, want kv.Error, f func(tr kv.Transaction)) error {
	tr, err := newTx(h)
	if err != nil {
		return err
	}
	canary := key(h, "l/canary")
	tr.Set(canary, []byte("must not be applied"))
	f(tr)
	err = tr.Commit()
	if err := expectCode("commit", err, want); err != nil {
		return err
	}
	if err := expectStored(h, "ordinary write of the failed transaction", canary, nil); err != nil {
		return err
	}
	kvs, err := readRange(h, kv.PrefixRange(h.Prefix))
	if err != nil {
		return err
	}
	if len(kvs) != 0 {
		return fmt.Errorf("after a failed transaction the keyspace holds %d keys, want none: %s", len(kvs), showPairs(h, kvs))
	}
	return nil
}
