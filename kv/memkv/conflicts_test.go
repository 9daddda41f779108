package memkv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

// TestConflictHistoryMatchesModel checks the treap against a brute-force
// list of (range, version) writes, across records and prunes.
func TestConflictHistoryMatchesModel(t *testing.T) {
	type write struct {
		b, e []byte
		v    int64
	}
	r := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return []byte{byte('a' + r.IntN(20)), byte('a' + r.IntN(3))} }
	var h conflictHistory
	var model []write
	oldest := int64(0)
	v := int64(0)
	for step := 0; step < 20000; step++ {
		switch op := r.IntN(10); {
		case op < 5:
			v++
			b, e := key(), key()
			if bytes.Compare(b, e) > 0 {
				b, e = e, b
			}
			h.record(b, e, v)
			model = append(model, write{b, e, v})
		case op < 9:
			b, e := key(), key()
			if bytes.Compare(b, e) > 0 {
				b, e = e, b
			}
			rv := oldest + r.Int64N(v-oldest+1)
			want := false
			for _, w := range model {
				if bytes.Compare(b, e) < 0 && w.v > rv && bytes.Compare(w.b, e) < 0 && bytes.Compare(b, w.e) < 0 && bytes.Compare(w.b, w.e) < 0 {
					want = true
					break
				}
			}
			if got := h.writtenAfter(b, e, rv); got != want {
				t.Fatalf("step %d: writtenAfter(%q,%q,%d)=%v want %v", step, b, e, rv, got, want)
			}
		default:
			// The window only moves forward.
			oldest = max(oldest, v-int64(r.IntN(50)))
			h.prune(oldest)
		}
		if h.size != count(h.root) {
			t.Fatalf("step %d: size %d, nodes %d", step, h.size, count(h.root))
		}
	}
}

func TestConflictHistoryPruneShrinks(t *testing.T) {
	var h conflictHistory
	for i := range 1000 {
		k := []byte(fmt.Sprintf("k%04d", i))
		h.record(k, keyAfter(k), int64(i+1))
	}
	if h.size < 1000 {
		t.Fatalf("size %d", h.size)
	}
	h.prune(1000)
	if h.size != 0 || h.root != nil {
		t.Fatalf("after pruning everything: size %d", h.size)
	}
}

// conflictCase runs reader, then a writer that commits, then commits the
// reader and reports whether it failed with 1020.
func conflicted(t *testing.T, db *DB, reader func(tr *txn), writer func(tr kv.Transaction)) bool {
	t.Helper()
	r := begin(t, db)
	reader(r)
	w := begin(t, db)
	writer(w)
	mustCommit(t, w)
	r.Set([]byte("reader-marker"), []byte("x")) // make it a writing transaction
	err := r.Commit()
	if err != nil && !isCode(err, 1020) {
		t.Fatalf("reader commit: %v", err)
	}
	return err != nil
}

func setKey(k string) func(kv.Transaction) {
	return func(tr kv.Transaction) { tr.Set([]byte(k), []byte("w")) }
}

func TestConflictRules(t *testing.T) {
	seed := func(db *DB) {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			put(t, db, k, "v")
		}
	}
	cases := []struct {
		name   string
		reader func(t *testing.T, tr *txn)
		writer func(kv.Transaction)
		want   bool
	}{
		{"get same key", func(t *testing.T, tr *txn) { mustGet(t, tr, "b") }, setKey("b"), true},
		{"get other key", func(t *testing.T, tr *txn) { mustGet(t, tr, "b") }, setKey("c"), false},
		{"get missing key then insert", func(t *testing.T, tr *txn) { mustGet(t, tr, "bb") }, setKey("bb"), true},
		{"snapshot get", func(t *testing.T, tr *txn) { mustGet(t, tr.Snapshot(), "b") }, setKey("b"), false},
		{"range full", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
		}, setKey("x"), true},
		{"range limit: key past last returned", func(t *testing.T, tr *txn) {
			kvs, _ := tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
			if !slices.Equal(keysOf(kvs), []string{"a", "b"}) {
				t.Fatalf("got %v", keysOf(kvs))
			}
		}, setKey("b\x00"), false},
		{"range limit: last returned key", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
		}, setKey("b"), true},
		{"range limit: before last returned", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2}).GetSliceWithError()
		}, setKey("ab"), true},
		{"reverse limit: before last returned", func(t *testing.T, tr *txn) {
			kvs, _ := tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2, Reverse: true}).GetSliceWithError()
			if !slices.Equal(keysOf(kvs), []string{"e", "d"}) {
				t.Fatalf("got %v", keysOf(kvs))
			}
		}, setKey("cz"), false},
		{"reverse limit: last returned key", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2, Reverse: true}).GetSliceWithError()
		}, setKey("d"), true},
		{"reverse limit: after range end of data", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 2, Reverse: true}).GetSliceWithError()
		}, setKey("y"), true},
		{"limit not reached covers whole range", func(t *testing.T, tr *txn) {
			tr.GetRange(rng("a", "z"), kv.RangeOptions{Limit: 10}).GetSliceWithError()
		}, setKey("y"), true},
		{"snapshot range", func(t *testing.T, tr *txn) {
			tr.Snapshot().GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
		}, setKey("c"), false},
		{"clear range hits read", func(t *testing.T, tr *txn) { mustGet(t, tr, "c") },
			func(w kv.Transaction) { w.ClearRange(rng("b", "d")) }, true},
		{"atomic op hits read", func(t *testing.T, tr *txn) { mustGet(t, tr, "c") },
			func(w kv.Transaction) { w.Add([]byte("c"), []byte{1}) }, true},
		{"write conflict range hits read", func(t *testing.T, tr *txn) { mustGet(t, tr, "c") },
			func(w kv.Transaction) { w.AddWriteConflictKey([]byte("c")) }, true},
		{"read conflict key", func(t *testing.T, tr *txn) {
			mustGet(t, tr, "a") // take the read version first
			tr.AddReadConflictKey([]byte("q"))
		}, setKey("q"), true},
		{"read conflict range", func(t *testing.T, tr *txn) {
			tr.GetReadVersion().Get()
			tr.AddReadConflictRange(rng("p", "r"))
		}, setKey("q"), true},
		{"own write before read: no conflict", func(t *testing.T, tr *txn) {
			tr.Set([]byte("b"), []byte("mine"))
			if string(mustGet(t, tr, "b")) != "mine" {
				t.Fatal("ryw")
			}
		}, setKey("b"), false},
		{"own clear before read: no conflict", func(t *testing.T, tr *txn) {
			tr.ClearRange(rng("b", "c"))
			mustGet(t, tr, "b")
		}, setKey("b"), false},
		{"own atomic before read: conflict", func(t *testing.T, tr *txn) {
			tr.Add([]byte("b"), []byte{1})
			mustGet(t, tr, "b")
		}, setKey("b"), true},
		{"atomic alone: no conflict", func(t *testing.T, tr *txn) {
			tr.GetReadVersion().Get()
			tr.Add([]byte("b"), []byte{1})
		}, setKey("b"), false},
		{"read before own write: conflict", func(t *testing.T, tr *txn) {
			mustGet(t, tr, "b")
			tr.Set([]byte("b"), []byte("mine"))
		}, setKey("b"), true},
		{"range over own writes: gaps conflict", func(t *testing.T, tr *txn) {
			tr.ClearRange(rng("a", "c"))
			tr.GetRange(rng("a", "e"), kv.RangeOptions{}).GetSliceWithError()
		}, setKey("cc"), true},
		{"range over own writes: cleared part does not", func(t *testing.T, tr *txn) {
			tr.ClearRange(rng("a", "c"))
			tr.GetRange(rng("a", "e"), kv.RangeOptions{}).GetSliceWithError()
		}, setKey("b"), false},
		{"read conflict range over own write skips it", func(t *testing.T, tr *txn) {
			tr.GetReadVersion().Get()
			tr.Set([]byte("q"), []byte("mine"))
			tr.AddReadConflictRange(rng("p", "r"))
		}, setKey("q"), false},
		{"watch reads the key", func(t *testing.T, tr *txn) {
			w := tr.Watch([]byte("b"))
			defer w.Cancel()
		}, setKey("b"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, _ := newTestDB(t)
			seed(db)
			got := conflicted(t, db, func(tr *txn) { c.reader(t, tr) }, c.writer)
			if got != c.want {
				t.Fatalf("conflict = %v, want %v", got, c.want)
			}
		})
	}
}

func TestIteratorConflictsOnFetchedOnly(t *testing.T) {
	db, _ := newTestDB(t)
	// 200 keys of ~100 bytes: the first iterator batch (4096 bytes) holds
	// about 37 of them.
	val := bytes.Repeat([]byte("v"), 90)
	for i := range 200 {
		k := fmt.Sprintf("k%03d", i)
		db.Transact(t.Context(), func(tr kv.Transaction) error { tr.Set([]byte(k), val); return nil })
	}
	r := begin(t, db)
	it := r.GetRange(rng("k", "l"), kv.RangeOptions{}).Iterator()
	if !it.Advance() {
		t.Fatal("empty")
	}
	first, _ := it.Get()
	if string(first.Key) != "k000" {
		t.Fatalf("first %q", first.Key)
	}
	// A write far past the first batch does not conflict.
	w := begin(t, db)
	w.Set([]byte("k150"), []byte("x"))
	mustCommit(t, w)
	r.Set([]byte("m"), []byte("x"))
	mustCommit(t, r)

	// A write inside it does.
	r = begin(t, db)
	it = r.GetRange(rng("k", "l"), kv.RangeOptions{}).Iterator()
	it.Advance()
	it.Get()
	w = begin(t, db)
	w.Set([]byte("k010"), []byte("x"))
	mustCommit(t, w)
	r.Set([]byte("m"), []byte("x"))
	wantCode(t, r.Commit(), 1020)
}

func TestLazyReadVersion(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "0")

	// A read-conflict key added before any read: a write that commits before
	// the first read does not conflict (measured on FDB 7.3).
	r := begin(t, db)
	r.AddReadConflictKey([]byte("k"))
	put(t, db, "k", "1")
	if got := string(mustGet(t, r, "other")); got != "" {
		t.Fatal(got)
	}
	r.Set([]byte("x"), []byte("x"))
	mustCommit(t, r)

	// After an explicit GetReadVersion it does.
	r = begin(t, db)
	if _, err := r.GetReadVersion().Get(); err != nil {
		t.Fatal(err)
	}
	r.AddReadConflictKey([]byte("k"))
	put(t, db, "k", "2")
	r.Set([]byte("x"), []byte("x"))
	wantCode(t, r.Commit(), 1020)

	// A transaction with only read-conflict ranges and writes takes its read
	// version at commit and cannot conflict with what committed before.
	r = begin(t, db)
	r.AddReadConflictKey([]byte("k"))
	r.Set([]byte("x"), []byte("y"))
	put(t, db, "k", "3")
	mustCommit(t, r)
}

func TestBlindWritesNeverConflict(t *testing.T) {
	db, _ := newTestDB(t)
	a, b := begin(t, db), begin(t, db)
	a.GetReadVersion().Get()
	b.GetReadVersion().Get()
	a.Set([]byte("k"), []byte("a"))
	b.Set([]byte("k"), []byte("b"))
	a.ClearRange(rng("a", "z"))
	mustCommit(t, b)
	mustCommit(t, a)
	if got := read(t, db, "k"); got != "<nil>" {
		t.Fatalf("k = %q", got)
	}
}

func TestReadOnlyCommit(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "0")
	r := begin(t, db)
	mustGet(t, r, "k")
	put(t, db, "k", "1") // would conflict, but read-only commits are not resolved
	mustCommit(t, r)
	if v, _ := r.GetCommittedVersion(); v != -1 {
		t.Fatalf("committed version %d", v)
	}
	// A transaction with only a write conflict range is not read-only.
	w := begin(t, db)
	mustGet(t, w, "k")
	w.AddWriteConflictKey([]byte("z"))
	put(t, db, "k", "2")
	wantCode(t, w.Commit(), 1020)
}

func TestCommitVersionsIncrease(t *testing.T) {
	db, clk := newTestDB(t)
	var last int64
	for i := range 5 {
		tr := begin(t, db)
		tr.Set([]byte("k"), []byte{byte(i)})
		mustCommit(t, tr)
		v, _ := tr.GetCommittedVersion()
		if v <= last {
			t.Fatalf("version %d after %d", v, last)
		}
		last = v
	}
	clk.Advance(2e6 * 1000) // 2 s
	tr := begin(t, db)
	rv, _ := tr.GetReadVersion().Get()
	if rv < last+1_900_000 {
		t.Fatalf("read version %d did not follow the clock from %d", rv, last)
	}
}

// Parallel read-modify-write counters lose no increment, and the retries
// are really exercised: every worker's first attempt reads the counter
// before any of them commits, so all but one of those first commits must
// conflict (1020) and retry.
func TestParallelCounters(t *testing.T) {
	db := Open(Options{})
	defer db.Close()
	const workers, each = 8, 100
	var barrier sync.WaitGroup
	barrier.Add(workers)
	done := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				first := i == 0
				err := db.Transact(t.Context(), func(tr kv.Transaction) error {
					v, err := tr.Get([]byte("n")).Get()
					if err != nil {
						return err
					}
					if first {
						// Wait until every worker has read the same value.
						first = false
						barrier.Done()
						barrier.Wait()
					}
					n := 0
					if v != nil {
						fmt.Sscan(string(v), &n)
					}
					tr.Set([]byte("n"), []byte(fmt.Sprint(n+1)))
					tr.Set([]byte(fmt.Sprintf("w%d", w)), []byte("x"))
					return nil
				})
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, db, "n"); got != fmt.Sprint(workers*each) {
		t.Fatalf("n = %s", got)
	}
	if c := db.Stats().Conflicts; c < workers-1 {
		t.Fatalf("%d conflicts, want at least %d: the first commits all read n before any committed", c, workers-1)
	}
}
