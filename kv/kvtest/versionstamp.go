package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: API = documentation/sphinx/source/api-common.rst.inc (release-7.3,
// |atomic-versionstamps-*| and |transaction-get-versionstamp-blurb|);
// ATOMIC = fdbclient/include/fdbclient/Atomic.h (getVersionstampKeyRange,
// transformVersionstampMutation); RYW = fdbclient/ReadYourWrites.actor.cpp
// (atomicOp: SetVersionstampedKey adds no write conflict and marks its
// possible range unreadable); NATIVE = fdbclient/NativeAPI.actor.cpp
// (Transaction::atomicOp: no write-conflict range for SetVersionstampedKey
// on the client; yet a real FDB 7.3 server makes the committed key conflict
// with readers of where it lands, case versionstamp/key-write-conflict).

// placeholder is the 10-byte versionstamp placeholder.
var placeholder = bytes.Repeat([]byte{0xee}, 10)

// vsKey builds prefix+before+placeholder+after followed by the 4-byte
// little-endian offset of the placeholder.
func vsKey(h Harness, before, after string) []byte {
	k := key(h, before)
	off := len(k)
	k = append(k, placeholder...)
	k = append(k, after...)
	return binary.LittleEndian.AppendUint32(k, uint32(off))
}

// vsValue builds before+placeholder+after and the 4-byte offset.
func vsValue(before, after string) []byte {
	v := []byte(before)
	off := len(v)
	v = append(v, placeholder...)
	v = append(v, after...)
	return binary.LittleEndian.AppendUint32(v, uint32(off))
}

// commitVersionstamped runs f, commits, and returns the transaction's
// versionstamp (requested before the commit, as FDB requires).
func commitVersionstamped(h Harness, f func(tr kv.Transaction)) ([]byte, int64, error) {
	tr, err := newTx(h)
	if err != nil {
		return nil, 0, err
	}
	f(tr)
	fut := tr.GetVersionstamp()
	if err := tr.Commit(); err != nil {
		return nil, 0, fmt.Errorf("commit: %w", err)
	}
	vs, err := fut.Get()
	if err != nil {
		return nil, 0, fmt.Errorf("GetVersionstamp after a successful commit: %w", err)
	}
	if len(vs) != 10 {
		return nil, 0, fmt.Errorf("GetVersionstamp returned %d bytes (%x), want 10", len(vs), vs)
	}
	cv, err := tr.GetCommittedVersion()
	if err != nil {
		return nil, 0, fmt.Errorf("GetCommittedVersion: %w", err)
	}
	return vs, cv, nil
}

func versionstampCases() []Case {
	return []Case{
		{
			Name: "versionstamp/key",
			Rule: "SetVersionstampedKey replaces the 10 bytes at the little-endian offset given by the key's last 4 bytes with the commit's versionstamp and drops those 4 bytes (API atomic-versionstamps; ATOMIC transformVersionstampMutation).",
			Run: func(ctx context.Context, h Harness) error {
				vs, _, err := commitVersionstamped(h, func(tr kv.Transaction) {
					tr.SetVersionstampedKey(vsKey(h, "v/", "/tail"), []byte("val"))
				})
				if err != nil {
					return err
				}
				kvs, err := readRange(h, kv.PrefixRange(key(h, "v/")))
				if err != nil {
					return err
				}
				want := append(append(key(h, "v/"), vs...), "/tail"...)
				if len(kvs) != 1 || !bytes.Equal(kvs[0].Key, want) || !bytes.Equal(kvs[0].Value, []byte("val")) {
					return fmt.Errorf("after SetVersionstampedKey the range holds %s, want one key %s=\"val\"", showPairs(h, kvs), show(want))
				}
				return nil
			},
		},
		{
			Name: "versionstamp/value",
			Rule: "SetVersionstampedValue replaces the 10 bytes at the little-endian offset given by the value's last 4 bytes and drops those 4 bytes (API atomic-versionstamps; ATOMIC transformVersionstampMutation).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "v/k")
				vs, _, err := commitVersionstamped(h, func(tr kv.Transaction) {
					tr.SetVersionstampedValue(k, vsValue("head:", ":tail"))
				})
				if err != nil {
					return err
				}
				want := append(append([]byte("head:"), vs...), ":tail"...)
				return expectStored(h, "versionstamped value", k, want)
			},
		},
		{
			Name: "versionstamp/same-in-one-tx",
			Rule: "Every versionstamped operation of one transaction gets the same 10 bytes, those of GetVersionstamp (API: the versionstamp used by any versionstamp operations in this transaction).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "v/value")
				vs, _, err := commitVersionstamped(h, func(tr kv.Transaction) {
					tr.SetVersionstampedKey(vsKey(h, "v/keys/", ""), []byte("1"))
					tr.SetVersionstampedValue(k, vsValue("", ""))
				})
				if err != nil {
					return err
				}
				kvs, err := readRange(h, kv.PrefixRange(key(h, "v/keys/")))
				if err != nil {
					return err
				}
				if len(kvs) != 1 {
					return fmt.Errorf("versionstamped keys: got %s, want one", showPairs(h, kvs))
				}
				fromKey := kvs[0].Key[len(key(h, "v/keys/")):]
				if !bytes.Equal(fromKey, vs) {
					return fmt.Errorf("versionstamp in key %x differs from GetVersionstamp %x", fromKey, vs)
				}
				return expectStored(h, "versionstamped value", k, vs)
			},
		},
		{
			Name: "versionstamp/increasing",
			Rule: "Versionstamps are unique and increase with commit order (API: versionstamps are monotonically increasing across transactions; 8-byte big-endian commit version + 2-byte batch order).",
			Run: func(ctx context.Context, h Harness) error {
				var prev []byte
				for i := 0; i < 5; i++ {
					vs, _, err := commitVersionstamped(h, func(tr kv.Transaction) {
						tr.SetVersionstampedKey(vsKey(h, "v/q/", ""), []byte{byte(i)})
					})
					if err != nil {
						return err
					}
					if prev != nil && bytes.Compare(vs, prev) <= 0 {
						return fmt.Errorf("commit %d versionstamp %x not greater than the previous %x", i, vs, prev)
					}
					prev = vs
				}
				kvs, err := readRange(h, kv.PrefixRange(key(h, "v/q/")))
				if err != nil {
					return err
				}
				if len(kvs) != 5 {
					return fmt.Errorf("got %d versionstamped keys, want 5 distinct: %s", len(kvs), showPairs(h, kvs))
				}
				for i, p := range kvs {
					if !bytes.Equal(p.Value, []byte{byte(i)}) {
						return fmt.Errorf("versionstamped keys not in commit order: %s", showPairs(h, kvs))
					}
				}
				return nil
			},
		},
		{
			Name: "versionstamp/commit-version",
			Rule: "The versionstamp's first 8 bytes are the big-endian commit version the transaction committed at (API: 'the first 8 bytes are the committed version of the database').",
			Run: func(ctx context.Context, h Harness) error {
				vs, cv, err := commitVersionstamped(h, func(tr kv.Transaction) {
					tr.SetVersionstampedValue(key(h, "v/k"), vsValue("", ""))
				})
				if err != nil {
					return err
				}
				if got := int64(binary.BigEndian.Uint64(vs[:8])); got != cv {
					return fmt.Errorf("versionstamp %x encodes version %d, GetCommittedVersion is %d", vs, got, cv)
				}
				return nil
			},
		},
		{
			Name: "versionstamp/read-versionstamped-value",
			Rule: "Reading, in the same transaction, a key written with SetVersionstampedValue fails with 1036 accessed_unreadable, by Get or by a range read over it (RYW: the key's value is unreadable until commit).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.SetVersionstampedValue(key(h, "v/k"), vsValue("", ""))
				_, err = get(tr, key(h, "v/k"))
				if err := expectCode("Get of a versionstamped value in its transaction", err, kv.ErrAccessedUnreadable); err != nil {
					return err
				}
				tr2, err := newTx(h)
				if err != nil {
					return err
				}
				tr2.SetVersionstampedValue(key(h, "v/k"), vsValue("", ""))
				_, err = tr2.GetRange(kv.PrefixRange(key(h, "v/")), kv.RangeOptions{}).GetSliceWithError()
				return expectCode("GetRange over a versionstamped value in its transaction", err, kv.ErrAccessedUnreadable)
			},
		},
		{
			Name: "versionstamp/read-key-landing-range",
			Rule: "After SetVersionstampedKey, the range where the key may land (placeholder from the read version to 0xff...) is unreadable to its transaction: a range read over it fails 1036, and so does Get of the key with an all-0xff stamp (RYW atomicOp: addUnmodifiedAndUnreadableRange(getVersionstampKeyRange)).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.SetVersionstampedKey(vsKey(h, "v/q/", "/t"), []byte("x"))
				_, err = tr.GetRange(kv.PrefixRange(key(h, "v/q/")), kv.RangeOptions{}).GetSliceWithError()
				if err := expectCode("GetRange over the versionstamped key's range", err, kv.ErrAccessedUnreadable); err != nil {
					return err
				}
				tr2, err := newTx(h)
				if err != nil {
					return err
				}
				tr2.SetVersionstampedKey(vsKey(h, "v/q/", "/t"), []byte("x"))
				maxKey := append(append(key(h, "v/q/"), bytes.Repeat([]byte{0xff}, 10)...), "/t"...)
				_, err = get(tr2, maxKey)
				return expectCode("Get of the key with an all-0xff versionstamp", err, kv.ErrAccessedUnreadable)
			},
		},
		{
			Name: "versionstamp/read-outside-landing-range",
			Rule: "Keys outside a versionstamped key's possible range stay readable in its transaction (RYW: only getVersionstampKeyRange becomes unreadable).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "v/a", "1", "w/b", "2"); err != nil {
					return err
				}
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				tr.SetVersionstampedKey(vsKey(h, "v/q/", ""), []byte("x"))
				v, err := get(tr, key(h, "v/a"))
				if err := expectNoErr("Get before the landing range", err); err != nil {
					return err
				}
				if err := expectValue("v/a", v, []byte("1")); err != nil {
					return err
				}
				kvs, err := tr.GetRange(kv.PrefixRange(key(h, "w/")), kv.RangeOptions{}).GetSliceWithError()
				if err := expectNoErr("GetRange after the landing range", err); err != nil {
					return err
				}
				return expectPairs(h, "GetRange after the landing range", kvs, "w/b", "2")
			},
		},
		{
			Name: "versionstamp/key-write-conflict",
			Rule: "A versionstamped key conflicts with a transaction that read the range where it lands, as a write of its final key. Measured on FDB 7.3 (kv/fdbkv conformance run, 2026-11-30): the commit proxy adds the write-conflict range once the versionstamp is substituted, although the client's atomicOp adds none (contrary to the project's fdb-facts sheet).",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, func(tr kv.Transaction) error {
					_, err := tr.GetRange(kv.PrefixRange(key(h, "v/q/")), kv.RangeOptions{}).GetSliceWithError()
					return err
				}, func(tr kv.Transaction) error {
					tr.SetVersionstampedKey(vsKey(h, "v/q/", ""), []byte("x"))
					return nil
				})
			},
		},
		{
			Name: "versionstamp/value-write-conflict",
			Rule: "A versionstamped value is a write to its key like Set: a transaction that read the key conflicts (NATIVE atomicOp adds the key's write-conflict range for SetVersionstampedValue).",
			Run: func(ctx context.Context, h Harness) error {
				return expectConflict(h, readPoint(h, "v/k"), func(tr kv.Transaction) error {
					tr.SetVersionstampedValue(key(h, "v/k"), vsValue("", ""))
					return nil
				})
			},
		},
		{
			Name: "versionstamp/failed-commit",
			Rule: "The GetVersionstamp future of a transaction whose commit fails fails too: FDB 7.3 with 2020 transaction_invalid_version, the kv contract with the commit's error (API get-versionstamp blurb: ready only after a successful commit; NATIVE commitAndWatch).",
			Run: func(ctx context.Context, h Harness) error {
				if err := seed(h, "v/k", "0"); err != nil {
					return err
				}
				txA, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := get(txA, key(h, "v/k")); err != nil {
					return expectNoErr("txA read", err)
				}
				txA.SetVersionstampedValue(key(h, "v/out"), vsValue("", ""))
				fut := txA.GetVersionstamp()
				if err := seed(h, "v/k", "1"); err != nil {
					return err
				}
				cerr := txA.Commit()
				if err := expectCode("txA commit", cerr, kv.ErrNotCommitted); err != nil {
					return err
				}
				vs, err := fut.Get()
				if err == nil {
					return fmt.Errorf("GetVersionstamp of a failed commit returned %x, want an error", vs)
				}
				// FDB 7.3 fails the future with 2020 transaction_invalid_version
				// (NATIVE commitAndWatch); the kv contract promises the
				// commit's error. Either is accepted.
				if c := kv.Code(err); c != 1020 && c != 2020 {
					return fmt.Errorf("GetVersionstamp of a failed commit: got %v, want 1020 (the commit's error) or 2020 transaction_invalid_version", err)
				}
				return nil
			},
		},
		{
			Name: "versionstamp/read-only-error",
			Rule: "A read-only transaction gets no versionstamp: its GetVersionstamp future fails with 2021 no_commit_version (API get-versionstamp blurb; NATIVE commitMutations sends no_commit_version for a read-only transaction).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if _, err := get(tr, key(h, "v/k")); err != nil {
					return expectNoErr("read", err)
				}
				fut := tr.GetVersionstamp()
				if err := tr.Commit(); err != nil {
					return expectNoErr("read-only commit", err)
				}
				vs, err := fut.Get()
				if err == nil {
					return fmt.Errorf("GetVersionstamp of a read-only transaction returned %x, want an error", vs)
				}
				return expectCode("GetVersionstamp of a read-only transaction", err, kv.ErrNoCommitVersion)
			},
		},
	}
}
