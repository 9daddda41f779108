package lanes

import (
	"testing"
	"time"
)

// The lane of an ID and the spreading of a zone's lanes are part of the
// on-disk format: these vectors pin them.
func TestOfIDVectors(t *testing.T) {
	id := [16]byte{0x01, 0x8f, 0x2c, 0x3a, 0x4b, 0x5c, 0x7d, 0x6e, 0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xe6, 0xf7}
	for _, c := range []struct{ n, want int }{{0, 0}, {1, 0}, {16, 3}} {
		if got := OfID(id, c.n); got != c.want {
			t.Errorf("OfID(id, %d) = %d, want the pinned %d: the lane of a stored job changed", c.n, got, c.want)
		}
	}
}

func TestOfIDUniform(t *testing.T) {
	const n, jobs = 16, 16_000
	var counts [n]int
	var id [16]byte
	for i := range jobs {
		id[15], id[14], id[13] = byte(i), byte(i>>8), byte(i>>16)
		counts[OfID(id, n)]++
	}
	for l, c := range counts {
		if c < jobs/n*8/10 || c > jobs/n*12/10 {
			t.Errorf("lane %d holds %d of %d jobs, want about %d", l, c, jobs, jobs/n)
		}
	}
}

func TestSpread(t *testing.T) {
	if Spread(0, 0) != 0 || Spread(7, 0) != 7 {
		t.Fatal("lane 0 of a zone must sit at the zone's hash")
	}
	if got := Spread(0, 1); uint64(got) != 0x9E3779B97F4A7C15 {
		t.Fatalf("Spread(0, 1) = %#x, want the golden ratio", uint64(got))
	}
	seen := map[int64]bool{}
	for lane := range 64 {
		h := Spread(-12345, lane)
		if seen[h] {
			t.Fatalf("two lanes of one zone share the pointer hash %d", h)
		}
		seen[h] = true
	}
}

func TestGrowthPolicy(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if Backlogged(now-GrowWait.Milliseconds()+1, now) || !Backlogged(now-GrowWait.Milliseconds(), now) {
		t.Fatal("backlogged must start at GrowWait of waiting")
	}
	for _, c := range []struct{ n, limit, want int }{
		{1, 64, 2}, {32, 64, 64}, {64, 64, 64}, {40, 64, 64}, {8, 5, 8}, {1000, 4096, Max}, {Max, 4096, Max},
	} {
		if got := Grow(c.n, c.limit); got != c.want {
			t.Errorf("Grow(%d, %d) = %d, want %d", c.n, c.limit, got, c.want)
		}
	}
	if SplitChunk(1) != 16 || SplitChunk(100) != 256 || SplitWays < 2 {
		t.Fatalf("split policy: chunk(1) %d, chunk(100) %d, ways %d", SplitChunk(1), SplitChunk(100), SplitWays)
	}
}
