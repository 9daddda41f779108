package quick

import (
	"math/rand/v2"
	"time"
)

// DefaultBackoff waits 2^attempt seconds (capped at one hour) plus up to a
// quarter of that again at random, so that jobs failing together do not
// return together.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base := time.Hour
	if attempt < 12 {
		base = time.Duration(1<<attempt) * time.Second
	}
	return base + time.Duration(rand.Int64N(int64(base)/4+1))
}
