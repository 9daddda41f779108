package main

import (
	"encoding/json"
	"math"
)

// JSON has no NaN, which stands here for a figure a repetition could not
// produce (a failed or skipped workload): it is written as null.

func nanNull(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func nanNulls(xs []float64) []*float64 {
	out := make([]*float64, len(xs))
	for i, x := range xs {
		out[i] = nanNull(x)
	}
	return out
}

func (s summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Median *float64   `json:"median"`
		Min    *float64   `json:"min"`
		Max    *float64   `json:"max"`
		Values []*float64 `json:"values"`
	}{nanNull(s.Median), nanNull(s.Min), nanNull(s.Max), nanNulls(s.Values)})
}

func (r result) MarshalJSON() ([]byte, error) {
	type plain result // the same fields without this method
	return json.Marshal(struct {
		plain
		EnqueueRate *float64 `json:"enqueue_jobs_per_s"`
		DrainRate   *float64 `json:"drain_jobs_per_s"`
		IdleP50     *float64 `json:"idle_p50_ms"`
		IdleP99     *float64 `json:"idle_p99_ms"`
		SteadyRate  *float64 `json:"steady_jobs_per_s"`
		SteadyP99   *float64 `json:"steady_p99_ms"`
	}{plain(r), nanNull(r.EnqueueRate), nanNull(r.DrainRate), nanNull(r.IdleP50), nanNull(r.IdleP99),
		nanNull(r.SteadyRate), nanNull(r.SteadyP99)})
}
