package lanes

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// The lane of a stored job must never change under it: these vectors break
// if the hash or the reduction changes.
func TestOfVectors(t *testing.T) {
	// XXH3-64 of the empty input, from the reference implementation.
	if got := xxh3.Hash(nil); got != 0x2d06800538d394c2 {
		t.Fatalf("xxh3(\"\") = %#x, not the reference XXH3_64bits value", got)
	}
	for _, v := range []struct {
		key            string
		n1024, n7, n64 int
	}{
		{"", 194, 4, 2},
		{"a", 543, 1, 31},
		{"job-1", 716, 3, 12},
		{"\x02gc\x00\x15\x01", 568, 2, 56},
		{"the quick brown fox jumps over the lazy dog", 426, 1, 42},
	} {
		for _, c := range []struct{ n, want int }{{1024, v.n1024}, {7, v.n7}, {64, v.n64}} {
			if got := Of([]byte(v.key), c.n); got != c.want {
				t.Errorf("Of(%q, %d) = %d, want %d", v.key, c.n, got, c.want)
			}
		}
	}
	if got := Of([]byte("anything"), 1); got != 0 {
		t.Errorf("Of(_, 1) = %d", got)
	}
}

// Chi-square goodness of fit of many random keys over the lanes. With n
// lanes the statistic has n-1 degrees of freedom, mean n-1 and standard
// deviation sqrt(2(n-1)); a bound of mean + 6 sd fails a uniform hash with
// probability ~1e-9, and the seed is fixed anyway, so the test is
// deterministic. A bias of a few percent in any lane blows through it.
func TestOfUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 7, 64, 1000} {
		const perLane = 200
		keys := n * perLane
		counts := make([]int, n)
		key := make([]byte, 24)
		for range keys {
			// Job-key-like inputs: a fixed prefix and structured suffixes,
			// the worst case for a weak hash.
			copy(key, "\x02gc\x00\x02tenant\x00")
			binary.BigEndian.PutUint64(key[12:], uint64(rng.Int64N(1<<40)))
			binary.BigEndian.PutUint32(key[20:], uint32(rng.IntN(4)))
			counts[Of(key, n)]++
		}
		chi := 0.0
		for _, c := range counts {
			d := float64(c) - perLane
			chi += d * d / perLane
		}
		df := float64(n - 1)
		if limit := df + 6*math.Sqrt(2*df); chi > limit {
			t.Errorf("n=%d: chi-square %.1f above %.1f: lanes are not uniform", n, chi, limit)
		}
	}
}

func TestOfPanicsOnNoLanes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Of(_, 0) did not panic")
		}
	}()
	Of([]byte("k"), 0)
}

func BenchmarkOf(b *testing.B) {
	key := []byte("\x02gc\x00\x02tenant-42\x00\x17\x01\x8f\x00\x00\x00\x01\x15\x05\x30abcdefgh")
	for b.Loop() {
		Of(key, 256)
	}
}
