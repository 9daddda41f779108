package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// samples, or NaN when there are none.
func percentile(samples []time.Duration, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return float64(s[rank-1]) / float64(time.Millisecond)
}

// summary is the median and range of one figure over the repetitions.
type summary struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
}

// summarize ignores NaN values (a figure a repetition could not produce).
func summarize(vals []float64) summary {
	var v []float64
	for _, x := range vals {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN(), Values: vals}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{Median: med, Min: s[0], Max: s[len(s)-1], Values: vals}
}

// format prints the median and, with more than one value, the range.
func (s summary) format(verb string) string {
	if math.IsNaN(s.Median) {
		return "–"
	}
	med, lo, hi := fmt.Sprintf(verb, s.Median), fmt.Sprintf(verb, s.Min), fmt.Sprintf(verb, s.Max)
	if lo == hi { // one value, or a range too narrow to print
		return med
	}
	return med + " (" + lo + "–" + hi + ")"
}

// scaled multiplies every figure by k (a share to a percentage).
func (s summary) scaled(k float64) summary {
	v := make([]float64, len(s.Values))
	for i, x := range s.Values {
		v[i] = x * k
	}
	return summary{Median: s.Median * k, Min: s.Min * k, Max: s.Max * k, Values: v}
}
