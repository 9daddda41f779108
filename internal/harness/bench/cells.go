package bench

import (
	"slices"

	"github.com/quickfdb/quickfdb/kv"
)

// Spread is one figure over a cell's repetitions.
type Spread struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{N: len(s), Median: med, Min: s[0], Max: s[len(s)-1]}
}

// Cell is one mode, variant and worker count over its repetitions.
type Cell struct {
	Mode     Mode   `json:"mode"`
	Variant  string `json:"variant"`
	Workers  int    `json:"workers"`
	JobsPS   Spread `json:"jobs_per_s"`
	Conflict Spread `json:"conflicts_per_claim"`
	// The start percentiles and the kv figures are medians over the
	// repetitions, field by field.
	StartP50, StartP99, StartP999 float64
	PerJob                        kv.PerUnit
	Errors                        int64
}

// Cells groups the results by cell, in the configuration's order.
func (r Report) Cells() []Cell {
	var out []Cell
	for _, mode := range r.Config.Modes {
		for _, v := range r.Config.Variants {
			for _, w := range r.Config.Workers {
				var rs []Result
				for _, res := range r.Results {
					if res.Mode == mode && res.Variant == v && res.Workers == w {
						rs = append(rs, res)
					}
				}
				if len(rs) > 0 {
					out = append(out, cellOf(mode, v, w, rs))
				}
			}
		}
	}
	return out
}

func cellOf(mode Mode, v string, w int, rs []Result) Cell {
	c := Cell{Mode: mode, Variant: v, Workers: w}
	col := func(f func(Result) float64) Spread {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		return spreadOf(vs)
	}
	med := func(f func(Result) float64) float64 { return col(f).Median }
	c.JobsPS = col(func(r Result) float64 { return r.JobsPerSec })
	c.Conflict = col(func(r Result) float64 { return r.ConflictRate })
	c.StartP50 = med(func(r Result) float64 { return r.EnqueueToStart.P50 })
	c.StartP99 = med(func(r Result) float64 { return r.EnqueueToStart.P99 })
	c.StartP999 = med(func(r Result) float64 { return r.EnqueueToStart.P999 })
	c.PerJob = kv.PerUnit{
		ReadVersions: med(func(r Result) float64 { return r.PerJob.ReadVersions }),
		Reads:        med(func(r Result) float64 { return r.PerJob.Reads }),
		RangeReads:   med(func(r Result) float64 { return r.PerJob.RangeReads }),
		KeysRead:     med(func(r Result) float64 { return r.PerJob.KeysRead }),
		BytesRead:    med(func(r Result) float64 { return r.PerJob.BytesRead }),
		Mutations:    med(func(r Result) float64 { return r.PerJob.Mutations }),
		BytesWritten: med(func(r Result) float64 { return r.PerJob.BytesWritten }),
		Commits:      med(func(r Result) float64 { return r.PerJob.Commits }),
		Conflicts:    med(func(r Result) float64 { return r.PerJob.Conflicts }),
	}
	for _, r := range rs {
		c.Errors += r.Errors
	}
	return c
}

// ratio is a's median over b's, with the range of the ratio over every
// pairing of their repetitions (worst a over best b to best a over worst
// b): a ratio whose range straddles 1 is not a difference the run shows.
type ratio struct {
	Median, Low, High float64
}

func ratioOf(a, b Spread) (ratio, bool) {
	if b.Median <= 0 || b.Min <= 0 {
		return ratio{}, false
	}
	return ratio{Median: a.Median / b.Median, Low: a.Min / b.Max, High: a.Max / b.Min}, true
}
