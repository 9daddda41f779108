package lanes

import "github.com/zeebo/xxh3"

// Of returns the lane of a job: xxh3 of key modulo n. The key is the job's
// key without its lane element (the caller builds those bytes), so a job
// changes lane exactly when its identity - vesting time included - changes.
//
// The hash is part of the on-disk format: changing it moves every stored
// job to another lane, so tests pin it with fixed vectors. n must be at
// least 1; Of panics otherwise, as a division by zero would.
func Of(key []byte, n int) int {
	if n <= 0 {
		panic("lanes.Of: lane count must be positive")
	}
	return int(xxh3.Hash(key) % uint64(n))
}
