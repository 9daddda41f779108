package memkv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

func benchKey(i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("bench/"), i)
}

// BenchmarkCommitSmall measures a small read-modify-write transaction (one
// read, one write, commit) run back to back.
func BenchmarkCommitSmall(b *testing.B) {
	db := Open(Options{})
	defer db.Close()
	ctx := context.Background()
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		k := benchKey(i % 1024)
		err := db.Transact(ctx, func(tr kv.Transaction) error {
			if _, err := tr.Get(k).Get(); err != nil {
				return err
			}
			tr.Set(k, k)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitParallel runs the same transaction from GOMAXPROCS
// goroutines on distinct keys, so commits do not conflict: it measures the
// serialized resolver and the parallel read path together.
func BenchmarkCommitParallel(b *testing.B) {
	db := Open(Options{})
	defer db.Close()
	ctx := context.Background()
	var next atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		base := next.Add(1) << 32
		i := uint64(0)
		for pb.Next() {
			i++
			k := benchKey(base + i%1024)
			err := db.Transact(ctx, func(tr kv.Transaction) error {
				if _, err := tr.Get(k).Get(); err != nil {
					return err
				}
				tr.Set(k, k)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	st := db.Stats()
	b.ReportMetric(float64(st.Conflicts), "conflicts")
}

// BenchmarkCommitParallelHotKey is the contended case: every transaction
// increments one counter by read-modify-write, so most attempts conflict and
// retry.
func BenchmarkCommitParallelHotKey(b *testing.B) {
	db := Open(Options{Backoff: Backoff{Initial: 1, Max: 1}})
	defer db.Close()
	ctx := context.Background()
	k := []byte("hot")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			err := db.Transact(ctx, func(tr kv.Transaction) error {
				v, err := tr.Get(k).Get()
				if err != nil {
					return err
				}
				n := uint64(0)
				if len(v) == 8 {
					n = binary.LittleEndian.Uint64(v)
				}
				tr.Set(k, binary.LittleEndian.AppendUint64(nil, n+1))
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(db.Stats().Conflicts)/float64(b.N), "conflicts/commit")
}

// historyOf builds a conflict history of n single-key writes on random keys,
// at versions 1..n.
func historyOf(n int) (*conflictHistory, [][]byte) {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	h := &conflictHistory{}
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = benchKey(r.Uint64())
		h.record(keys[i], keyAfter(keys[i]), int64(i+1))
	}
	return h, keys
}

// BenchmarkConflictCheck measures one resolver query, "was [b, e) written
// after rv?", against histories of 1k, 10k and 100k recent write ranges:
//   - point: a random key, rv half-way through the history (the answer is
//     almost always no, so the search goes to the bottom);
//   - range: 1/1000 of the keyspace, with only the last 10 writes newer
//     than rv;
//   - linear: the point query done as a scan over the write list, the
//     baseline the interval structure replaces.
func BenchmarkConflictCheck(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		h, keys := historyOf(n)
		r := rand.New(rand.NewPCG(9, 9))
		b.Run(fmt.Sprintf("point/%d", n), func(b *testing.B) {
			hits := 0
			for b.Loop() {
				k := benchKey(r.Uint64())
				if h.writtenAfter(k, keyAfter(k), int64(n/2)) {
					hits++
				}
			}
			_ = hits
		})
		b.Run(fmt.Sprintf("range/%d", n), func(b *testing.B) {
			for b.Loop() {
				lo := r.Uint64()
				lo -= lo % (1 << 54)
				h.writtenAfter(benchKey(lo), benchKey(lo+1<<54), int64(n-10))
			}
		})
		b.Run(fmt.Sprintf("linear/%d", n), func(b *testing.B) {
			for b.Loop() {
				k := benchKey(r.Uint64())
				e := keyAfter(k)
				for i, w := range keys {
					if int64(i+1) > int64(n/2) && bytes.Compare(w, e) < 0 && bytes.Compare(k, keyAfter(w)) < 0 {
						break
					}
				}
			}
		})
	}
}

// BenchmarkConflictRecord measures adding a commit's write range to a
// history of 100k entries.
func BenchmarkConflictRecord(b *testing.B) {
	h, _ := historyOf(100_000)
	r := rand.New(rand.NewPCG(3, 3))
	v := int64(100_001)
	for b.Loop() {
		k := benchKey(r.Uint64())
		h.record(k, keyAfter(k), v)
		v++
	}
}

// BenchmarkGet measures a point read in an open transaction.
func BenchmarkGet(b *testing.B) {
	db := Open(Options{})
	defer db.Close()
	for i := range 10_000 {
		put(b, db, string(benchKey(uint64(i))), "value")
	}
	tr := begin(b, db)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		if _, err := tr.Get(benchKey(i % 10_000)).Get(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetRange100 reads 100 consecutive keys.
func BenchmarkGetRange100(b *testing.B) {
	db := Open(Options{})
	defer db.Close()
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := range 10_000 {
			tr.Set(benchKey(uint64(i)), []byte("value"))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	tr := begin(b, db)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i = (i + 100) % 9_900
		kvs, err := tr.GetRange(kv.KeyRange{Begin: benchKey(i), End: benchKey(i + 100)}, kv.RangeOptions{}).GetSliceWithError()
		if err != nil || len(kvs) != 100 {
			b.Fatal(len(kvs), err)
		}
	}
}

// BenchmarkCommitLargeStore is a commit of the scale run's shape on a store
// of 200,000 keys: one key moved (cleared and set elsewhere, as a claim
// moves a job key), three set in place, one blind clear of a key that is
// not there, all at random places. Every commit publishes a snapshot, so
// its writes copy the B-tree nodes on their paths: B/op is mostly those
// copies.
func BenchmarkCommitLargeStore(b *testing.B) {
	db := Open(Options{})
	defer db.Close()
	ctx := context.Background()
	const n = 200_000
	val := bytes.Repeat([]byte("v"), 150)
	for from := 0; from < n; from += 10_000 {
		err := db.Transact(ctx, func(tr kv.Transaction) error {
			for i := from; i < from+10_000; i++ {
				tr.Set(benchKey(uint64(i)*2), val)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(5, 5))
	b.ReportAllocs()
	for b.Loop() {
		err := db.Transact(ctx, func(tr kv.Transaction) error {
			k := benchKey(r.Uint64N(n) * 2)
			tr.Clear(k)
			tr.Set(benchKey(r.Uint64N(n)*2), val)
			for range 3 {
				tr.Set(benchKey(r.Uint64N(n)*2), val)
			}
			tr.Clear(benchKey(r.Uint64N(n)*2 + 1))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
