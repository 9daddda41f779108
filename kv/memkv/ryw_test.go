package memkv

import (
	"slices"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

func TestReadYourWrites(t *testing.T) {
	db, _ := newTestDB(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, db, k, "old-"+k)
	}
	tr := begin(t, db)
	tr.Set([]byte("b"), []byte("new-b"))
	tr.Set([]byte("bb"), []byte("new-bb"))
	tr.Clear([]byte("c"))
	tr.Set([]byte("e"), []byte{})

	if got := string(mustGet(t, tr, "b")); got != "new-b" {
		t.Fatalf("b = %q", got)
	}
	if got := mustGet(t, tr, "c"); got != nil {
		t.Fatalf("c = %q", got)
	}
	if got := mustGet(t, tr, "e"); got == nil || len(got) != 0 {
		t.Fatalf("empty value read as %v", got)
	}
	kvs, err := tr.GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "bb", "d", "e"}; !slices.Equal(keysOf(kvs), want) {
		t.Fatalf("range %v want %v", keysOf(kvs), want)
	}
	rev, _ := tr.GetRange(rng("a", "z"), kv.RangeOptions{Reverse: true, Limit: 3}).GetSliceWithError()
	if want := []string{"e", "d", "bb"}; !slices.Equal(keysOf(rev), want) {
		t.Fatalf("reverse %v want %v", keysOf(rev), want)
	}

	tr.ClearRange(rng("a", "d"))
	tr.Set([]byte("b"), []byte("again"))
	kvs, _ = tr.GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
	if want := []string{"b", "d", "e"}; !slices.Equal(keysOf(kvs), want) {
		t.Fatalf("after clear range %v want %v", keysOf(kvs), want)
	}
	// An atomic op on a cleared key starts from "missing".
	tr.Add([]byte("a"), []byte{7})
	if got := mustGet(t, tr, "a"); !slices.Equal(got, []byte{7}) {
		t.Fatalf("a = %v", got)
	}
	mustCommit(t, tr)
	for k, want := range map[string]string{"a": "\x07", "b": "again", "bb": "<nil>", "c": "<nil>", "d": "old-d", "e": ""} {
		if got := read(t, db, k); got != want {
			t.Errorf("%s = %q want %q", k, got, want)
		}
	}
}

func TestReturnedSlicesAreCopies(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "value")
	tr := begin(t, db)
	v := mustGet(t, tr, "k")
	v[0] = 'X'
	if got := string(mustGet(t, tr, "k")); got != "value" {
		t.Fatalf("store changed through a returned slice: %q", got)
	}
	buf := []byte("abc")
	tr.Set([]byte("j"), buf)
	buf[0] = 'X'
	if got := string(mustGet(t, tr, "j")); got != "abc" {
		t.Fatalf("store changed through a caller's buffer: %q", got)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "1")
	old := begin(t, db)
	if got := string(mustGet(t, old, "k")); got != "1" {
		t.Fatal(got)
	}
	for i := range 50 {
		put(t, db, "k", "2")
		put(t, db, string(rune('a'+i%26)), "x")
	}
	db.Transact(t.Context(), func(tr kv.Transaction) error { tr.ClearRange(rng("", "\xff")); return nil })
	if got := string(mustGet(t, old, "k")); got != "1" {
		t.Fatalf("old snapshot changed: %q", got)
	}
	kvs, _ := old.GetRange(rng("", "\xff"), kv.RangeOptions{}).GetSliceWithError()
	if !slices.Equal(keysOf(kvs), []string{"k"}) {
		t.Fatalf("old snapshot range: %v", keysOf(kvs))
	}
}

func TestKeyLimitsAndLegalRange(t *testing.T) {
	db, _ := newTestDB(t)
	long := make([]byte, kv.MaxKeySize+1)

	tr := begin(t, db)
	if v := mustGet(t, tr, string(long)); v != nil {
		t.Fatal("a key over the limit reads as missing")
	}
	_, err := tr.Get([]byte("\xff")).Get()
	wantCode(t, err, 2004)
	_, err = tr.GetRange(rng("a", "\xff\x00"), kv.RangeOptions{}).GetSliceWithError()
	wantCode(t, err, 2004)
	if _, err := tr.GetRange(rng("a", "\xff"), kv.RangeOptions{}).GetSliceWithError(); err != nil {
		t.Fatalf("range up to \\xff: %v", err)
	}
	kvs, err := tr.GetRange(rng("b", "a"), kv.RangeOptions{}).GetSliceWithError()
	if err != nil || len(kvs) != 0 {
		t.Fatalf("inverted range read: %v %v", kvs, err)
	}
	_, err = tr.GetRange(rng("a", "b"), kv.RangeOptions{Limit: -1}).GetSliceWithError()
	wantCode(t, err, 2012)

	for _, c := range []struct {
		name string
		op   func(tr kv.Transaction)
		code int
	}{
		{"key too large", func(tr kv.Transaction) { tr.Set(long, []byte("v")) }, 2102},
		{"value too large", func(tr kv.Transaction) { tr.Set([]byte("k"), make([]byte, kv.MaxValueSize+1)) }, 2103},
		{"system key", func(tr kv.Transaction) { tr.Set([]byte("\xffx"), []byte("v")) }, 2004},
		{"inverted clear", func(tr kv.Transaction) { tr.ClearRange(rng("b", "a")) }, 2005},
		{"clear past keyspace", func(tr kv.Transaction) { tr.ClearRange(rng("a", "\xff\x01")) }, 2004},
		{"atomic value too large", func(tr kv.Transaction) { tr.Add([]byte("k"), make([]byte, kv.MaxValueSize+1)) }, 2103},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := begin(t, db)
			c.op(tr)
			_, err := tr.Get([]byte("x")).Get()
			wantCode(t, err, c.code)
			wantCode(t, tr.Commit(), c.code)
			// Not retryable; nothing was applied.
			wantCode(t, tr.OnError(tr.Commit()), c.code)
		})
	}
	if st := db.Stats(); st.Keys != 0 {
		t.Fatalf("%d keys stored after failed transactions", st.Keys)
	}
	tr = begin(t, db)
	if err := tr.AddReadConflictRange(rng("b", "a")); !isCode(err, 2005) {
		t.Fatalf("inverted conflict range: %v", err)
	}
	if err := tr.AddWriteConflictKey([]byte("\xff")); !isCode(err, 2004) {
		t.Fatalf("conflict key past keyspace: %v", err)
	}
}

func TestTransactionTooLarge(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	val := make([]byte, kv.MaxValueSize)
	for i := range 100 {
		tr.Set([]byte{byte(i)}, val)
	}
	size, _ := tr.GetApproximateSize().Get()
	if size <= kv.MaxTransactionSize {
		t.Fatalf("approximate size %d", size)
	}
	wantCode(t, tr.Commit(), 2101)
	if st := db.Stats(); st.Keys != 0 || st.Commits != 0 {
		t.Fatalf("stats after too large: %+v", st)
	}
	// Overwriting a key counts once at commit (FDB coalesces the mutations)
	// though GetApproximateSize counts every call.
	tr = begin(t, db)
	for range 200 {
		tr.Set([]byte("k"), val)
	}
	size, _ = tr.GetApproximateSize().Get()
	if size <= kv.MaxTransactionSize {
		t.Fatalf("approximate size %d", size)
	}
	mustCommit(t, tr)
}

func TestApproximateSizeGrows(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	s0, _ := tr.GetApproximateSize().Get()
	tr.Set([]byte("key"), []byte("value"))
	s1, _ := tr.GetApproximateSize().Get()
	mustGet(t, tr, "other")
	s2, _ := tr.GetApproximateSize().Get()
	tr.ClearRange(rng("a", "b"))
	s3, _ := tr.GetApproximateSize().Get()
	if !(s0 == 0 && s1 > s0 && s2 > s1 && s3 > s2) {
		t.Fatalf("sizes %d %d %d %d", s0, s1, s2, s3)
	}
	// FDB's formula for a set with its write conflict range.
	if want := int64(3 + 5 + mutationRefSize + keyRangeRefSize + 7); s1 != want {
		t.Fatalf("set cost %d want %d", s1, want)
	}
}
