package memkv

import (
	"bytes"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

func TestApplyAtomic(t *testing.T) {
	b := func(xs ...byte) []byte { return xs }
	big := bytes.Repeat([]byte("x"), kv.MaxValueSize)
	cases := []struct {
		name    string
		op      kv.MutationType
		old     []byte
		present bool
		param   []byte
		want    []byte
		wantOK  bool
	}{
		{"add missing", kv.MutationAdd, nil, false, b(5, 0), b(5, 0), true},
		{"add carry", kv.MutationAdd, b(0xff, 0), true, b(1, 0), b(0, 1), true},
		{"add truncates to param", kv.MutationAdd, b(1, 2, 3), true, b(1), b(2), true},
		{"add extends old", kv.MutationAdd, b(1), true, b(1, 1, 1), b(2, 1, 1), true},
		{"add empty param", kv.MutationAdd, b(1), true, b(), b(), true},
		{"and missing takes param", kv.MutationBitAnd, nil, false, b(0xf0), b(0xf0), true},
		{"and", kv.MutationBitAnd, b(0x3c, 0xff), true, b(0xf0, 0x0f, 0xff), b(0x30, 0x0f, 0), true},
		{"or", kv.MutationBitOr, b(0x01), true, b(0x10, 0x20), b(0x11, 0x20), true},
		{"xor", kv.MutationBitXor, b(0xff, 0xff), true, b(0x0f), b(0xf0), true},
		{"append", kv.MutationAppendIfFits, b('a'), true, b('b'), b('a', 'b'), true},
		{"append too big keeps old", kv.MutationAppendIfFits, big, true, b('b'), big, true},
		{"max missing", kv.MutationMax, nil, false, b(3), b(3), true},
		{"max keeps larger old", kv.MutationMax, b(0, 2), true, b(0xff, 1), b(0, 2), true},
		{"max takes larger param", kv.MutationMax, b(0xff, 1), true, b(0, 2), b(0, 2), true},
		{"max resizes old", kv.MutationMax, b(9, 0, 0), true, b(1, 0), b(9, 0), true},
		{"min missing takes param", kv.MutationMin, nil, false, b(7), b(7), true},
		{"min present empty is zero", kv.MutationMin, b(), true, b(7), b(0), true},
		{"min keeps smaller old", kv.MutationMin, b(1, 1), true, b(0, 2), b(1, 1), true},
		{"min takes smaller param", kv.MutationMin, b(0, 2), true, b(1, 1), b(1, 1), true},
		{"byte min", kv.MutationByteMin, b('b'), true, b('a', 'z'), b('a', 'z'), true},
		{"byte min missing", kv.MutationByteMin, nil, false, b('z'), b('z'), true},
		{"byte max", kv.MutationByteMax, b('b'), true, b('a', 'z'), b('b'), true},
		{"compare and clear equal", kv.MutationCompareAndClear, b(1), true, b(1), nil, false},
		{"compare and clear differs", kv.MutationCompareAndClear, b(1), true, b(2), b(1), true},
		{"compare and clear missing", kv.MutationCompareAndClear, nil, false, b(1), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := applyAtomic(c.op, c.old, c.present, c.param)
			if ok != c.wantOK || !bytes.Equal(got, c.want) {
				t.Fatalf("got %v,%v want %v,%v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestAtomicThroughTransactions(t *testing.T) {
	db, _ := newTestDB(t)
	one := []byte{1, 0, 0, 0}
	for range 3 {
		db.Transact(t.Context(), func(tr kv.Transaction) error { tr.Add([]byte("n"), one); return nil })
	}
	if got := read(t, db, "n"); got != string([]byte{3, 0, 0, 0}) {
		t.Fatalf("n = %v", []byte(got))
	}
	// Reads inside the transaction apply pending operations to the stored
	// value.
	tr := begin(t, db)
	tr.Add([]byte("n"), one)
	tr.Add([]byte("n"), one)
	if got := mustGet(t, tr, "n"); !bytes.Equal(got, []byte{5, 0, 0, 0}) {
		t.Fatalf("ryw n = %v", got)
	}
	tr.CompareAndClear([]byte("n"), []byte{5, 0, 0, 0})
	if got := mustGet(t, tr, "n"); got != nil {
		t.Fatalf("after compare-and-clear: %v", got)
	}
	mustCommit(t, tr)
	if got := read(t, db, "n"); got != "<nil>" {
		t.Fatalf("n = %v", []byte(got))
	}
	// Invalid mutation types are deferred to the next read or commit.
	tr = begin(t, db)
	tr.Atomic(kv.MutationType(99), []byte("n"), one)
	_, err := tr.Get([]byte("n")).Get()
	wantCode(t, err, 2018)
	wantCode(t, tr.Commit(), 2018)
}
