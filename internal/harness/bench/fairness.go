package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// fairSpec skews a steady load: one item space enqueues HotFactor times as
// much as each of the others, and a share of the jobs is slow. No variant
// schedules by item space, so what this measures is whether the claim
// order lets some job wait far longer than the rest while slow jobs hold
// slots: FIFO-ish orders (recipe, lanes, which take the longest-vested
// first in the lanes they scan) against a random pick (QuiCK's).
type fairSpec struct {
	spaces    int
	hot       int
	slowShare float64
	slow      time.Duration
	rate      float64
	run       time.Duration
}

func (f *fairSpec) pick(r *rand.Rand) string {
	n := r.IntN(f.hot + f.spaces - 1)
	if n < f.hot {
		return "space-00"
	}
	return fmt.Sprintf("space-%02d", n-f.hot+1)
}

func (c Config) fairSpec() *fairSpec {
	return &fairSpec{spaces: max(c.FairSpaces, 2), hot: max(c.FairHotFactor, 1), slowShare: c.FairSlowShare,
		slow: c.FairSlow, rate: c.FairRate, run: c.FairRun}
}

// Fairness runs every variant under the skewed load at FairWorkers workers.
func Fairness(ctx context.Context, eng Engine, cfg Config, variant string) (Result, error) {
	return runOne(ctx, eng, cfg, variant, cfg.FairWorkers, Steady, cfg.fairSpec())
}

// FairSummary is one variant's fairness figures.
type FairSummary struct {
	Variant string `json:"variant"`
	// Wait is vested-to-start over every start.
	Wait Percentiles `json:"wait"`
	// LongestWaitMs counts jobs still waiting at the end as well.
	LongestWaitMs float64 `json:"longest_wait_ms"`
	Unstarted     int64   `json:"unstarted"`
	HotP99        float64 `json:"hot_p99_ms"`
	ColdP99       float64 `json:"worst_cold_space_p99_ms"`
	// MaxOverP99 is LongestWait / p99: how far the unluckiest job stands out.
	MaxOverP99 float64 `json:"max_over_p99"`
	JobsPerSec float64 `json:"jobs_per_s"`
}

// Summarise reduces a fairness Result.
func Summarise(r Result) FairSummary {
	s := FairSummary{Variant: r.Variant, Wait: r.VestToStart, LongestWaitMs: r.LongestWaitMs, Unstarted: r.Unstarted, JobsPerSec: r.JobsPerSec}
	for sp, p := range r.BySpace {
		if sp == "space-00" {
			s.HotP99 = p.P99
		} else {
			s.ColdP99 = max(s.ColdP99, p.P99)
		}
	}
	if r.VestToStart.P99 > 0 {
		s.MaxOverP99 = r.LongestWaitMs / r.VestToStart.P99
	}
	return s
}
