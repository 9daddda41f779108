package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"
)

// Report is everything one `quickbench bench` invocation measured.
type Report struct {
	Started  time.Time     `json:"started"`
	Engine   string        `json:"engine"`
	Machine  string        `json:"machine"`
	Config   Config        `json:"config"`
	Results  []Result      `json:"results"`
	Fairness []Result      `json:"fairness"`
	FairSum  []FairSummary `json:"fairness_summary"`
}

// Suite runs every mode, variant and worker count of cfg, then the
// fairness run of every variant, printing progress to log.
func Suite(ctx context.Context, eng Engine, cfg Config, fairness bool, log io.Writer) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	rep := Report{Started: time.Now(), Engine: eng.Name, Config: cfg,
		Machine: fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d), %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())}
	// Repetitions are interleaved, so that a slow spell of a shared
	// machine spreads over every variant instead of striking one.
	for n := 1; n <= max(cfg.Reps, 1); n++ {
		for _, mode := range cfg.Modes {
			for _, v := range cfg.Variants {
				for _, w := range cfg.Workers {
					r, err := RunOne(ctx, eng, cfg, v, w, mode)
					if err != nil {
						return rep, fmt.Errorf("%s/%s/%d workers: %w", mode, v, w, err)
					}
					r.Rep = n
					fmt.Fprintf(log, "rep %d %-7s %-18s workers=%-3d %8.0f jobs/s  conflicts/claim=%.3f  p99 start=%.1fms  errors=%d\n",
						n, mode, v, w, r.JobsPerSec, r.ConflictRate, r.EnqueueToStart.P99, r.Errors)
					rep.Results = append(rep.Results, r)
				}
			}
		}
	}
	if fairness {
		for _, v := range cfg.Variants {
			r, err := Fairness(ctx, eng, cfg, v)
			if err != nil {
				return rep, fmt.Errorf("fairness/%s: %w", v, err)
			}
			s := Summarise(r)
			fmt.Fprintf(log, "fair    %-18s workers=%-3d wait p50=%.1fms p99=%.1fms max=%.1fms longest=%.1fms\n",
				v, cfg.FairWorkers, s.Wait.P50, s.Wait.P99, s.Wait.Max, s.LongestWaitMs)
			rep.Fairness = append(rep.Fairness, r)
			rep.FairSum = append(rep.FairSum, s)
		}
	}
	return rep, nil
}

// Violations lists every invariant violation in the report.
func (r Report) Violations() []string {
	var out []string
	for _, res := range append(append([]Result(nil), r.Results...), r.Fairness...) {
		for _, v := range res.Violations {
			out = append(out, fmt.Sprintf("%s/%s/%d: %s", res.Mode, res.Variant, res.Workers, v))
		}
	}
	return out
}
