package lanes

import (
	"time"

	"github.com/zeebo/xxh3"
)

// Max bounds a zone's lane count.
const Max = 1024

// OfID is the lane of a job with ID id in a zone of n lanes: xxh3 of the ID
// modulo n (0 when n is at most 1). A job keeps its lane for life: its key
// names the lane, and a zone that grows only places new jobs by the new
// count. The hash is part of the on-disk format; tests pin it.
func OfID(id [16]byte, n int) int {
	if n <= 1 {
		return 0
	}
	return int(xxh3.Hash(id[:]) % uint64(n))
}

// Spread is where lane of a zone whose hash is zoneHash sits among the
// pointers of one second of the index: the zone's hash plus the lane times
// the 64-bit golden ratio, so that a zone's lanes are far apart in the
// hash space and a random peek meets one of them, not a run of them. Part
// of the on-disk format (the pointer key); tests pin it.
func Spread(zoneHash int64, lane int) int64 {
	return int64(uint64(zoneHash) + uint64(lane)*0x9E3779B97F4A7C15)
}

// GrowWait is how long the oldest job a claim takes must have waited for
// the claim to count its zone backlogged.
const GrowWait = time.Second

// Backlogged reports whether a claim that left vested jobs behind found its
// lane backlogged: the oldest job it took vested at oldestVestMs, at least
// GrowWait before nowMs.
func Backlogged(oldestVestMs, nowMs int64) bool {
	return nowMs-oldestVestMs >= GrowWait.Milliseconds()
}

// Grow is the lane count a backlogged zone of n lanes grows to: twice n, at
// most limit (and Max); n itself when it is already there.
func Grow(n, limit int) int {
	return max(n, min(2*n, limit, Max))
}

// ContendedMax is the lane count up to which a short-job zone grows because
// its enqueues conflict (package quick, "Growth on contention"): enough
// lanes that 32 producers writing single jobs into one zone rarely meet in
// one lane (0.49 conflicts per job at 2,000 jobs/s, against 3.7 with one),
// and no more, since each lane of a zone that keeps up costs its own
// pointer and claim.
const ContendedMax = 16

// SplitWays is how many other lanes a claim spreads a deep lane's chunk
// over.
const SplitWays = 4

// SplitChunk is how many vested jobs a split moves for a claim of at most
// max jobs: 16 claims' worth, at most 256, so that one transaction stays
// small.
func SplitChunk(max int) int { return min(16*max, 256) }
