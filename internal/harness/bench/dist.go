package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Dist is a job duration distribution. Handlers sleep on the real clock for
// a duration drawn from it, so workers hold their slots the way real
// handlers waiting on I/O do, without burning the CPU the engine needs.
type Dist struct {
	Kind string        `json:"kind"` // fixed, uniform or exponential
	Mean time.Duration `json:"mean"`
}

// ParseDist reads "fixed:20ms", "uniform:20ms" (0 to twice the mean) or
// "exp:20ms" (exponential).
func ParseDist(s string) (Dist, error) {
	kind, mean, ok := strings.Cut(s, ":")
	if !ok {
		return Dist{}, fmt.Errorf("bench: duration %q: want kind:mean, e.g. exp:20ms", s)
	}
	d, err := time.ParseDuration(mean)
	if err != nil || d < 0 {
		return Dist{}, fmt.Errorf("bench: duration %q: bad mean", s)
	}
	switch kind {
	case "fixed", "uniform":
	case "exp", "exponential":
		kind = "exponential"
	default:
		return Dist{}, fmt.Errorf("bench: duration %q: kind must be fixed, uniform or exp", s)
	}
	return Dist{Kind: kind, Mean: d}, nil
}

func (d Dist) String() string { return fmt.Sprintf("%s:%v", d.Kind, d.Mean) }

// Draw returns one duration.
func (d Dist) Draw(r *rand.Rand) time.Duration {
	switch d.Kind {
	case "uniform":
		return time.Duration(r.Int64N(2*int64(d.Mean) + 1))
	case "exponential":
		return time.Duration(r.ExpFloat64() * float64(d.Mean))
	}
	return d.Mean
}
