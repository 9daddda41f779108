package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Write prints the report: the faults, the figures and every violation.
func (r *Report) Write(w io.Writer) {
	v := r.Verdict
	c := r.Config
	fmt.Fprintf(w, "chaos run on %s, subspace (%s)\n", r.Engine, r.Run)
	fmt.Fprintf(w, "  config: %d workers x %d slots, %d producers at %.0f jobs/s in batches of %d; baseline %v, chaos %v, a fault every %v (+ its own time), downtime %v\n",
		c.Workers, c.Concurrency, c.Producers, c.Rate, c.Batch, c.Baseline, c.Duration, c.FaultEvery, c.Downtime)
	fmt.Fprintf(w, "  faults: %d, %d server-process kills\n", len(r.Faults), v.Kills)
	for _, f := range r.Faults {
		status := f.Detail
		if f.Err != "" {
			status = "FAILED: " + f.Err
		}
		fmt.Fprintf(w, "    %7.1fs  %-26s %s\n", f.StartS, f.Name, status)
	}
	fmt.Fprintf(w, "  producer transactions: %d (failed %d; unknown outcome %d, of which applied %d); jobs of committed ones %d; IDs of uncommitted attempts checked absent %d\n",
		v.Batches, v.BatchesFailed, v.BatchesUnknown, v.UnknownApplied, v.Jobs, v.GhostsChecked)
	fmt.Fprintf(w, "  jobs: %d completed, %d dead-lettered by the workload (poison); cron: %d chains, %d occurrences completed (%d late ones standing for missed times)\n",
		v.Completed, v.DeadLettered, v.CronChains, v.CronOccurrences, v.CronCollapsed)
	fmt.Fprintf(w, "  handler runs: %d; jobs run more than once: %d; extra runs by what ended the run before: %s\n", v.Runs, v.RunAgain, formatReasons(v.Reasons))
	fmt.Fprintf(w, "  longest gap between completions: %v at %.1fs, after %s\n", v.LongestGap.Round(time.Millisecond), v.LongestGapAtS, orDash(v.LongestGapAfter))
	for _, g := range v.FaultGaps {
		fmt.Fprintf(w, "    %7.1fs  %-26s took %6.1fs, longest gap from its start to 10 s after: %v\n", g.AtS, g.Fault, g.Took.Seconds(), g.Gap.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  FDB errors handed to OnError, by code: %s\n", formatErrCodes(v.Codes))
	fmt.Fprintf(w, "  baseline (before the first fault): %.1f jobs/s completed; enqueue-to-start %s\n", v.BaselineRate, v.BaselineStart)
	fmt.Fprintf(w, "  under faults: enqueue-to-start %s\n", v.ChaosStart)
	if v.OK() {
		fmt.Fprintf(w, "  PASS: 0 lost, 0 duplicate effects, 0 stale-token writes, 0 jobs of failed producer transactions, cron exact\n")
		return
	}
	fmt.Fprintf(w, "  FAIL: %d violations\n", len(v.Violations))
	for _, s := range v.Violations {
		fmt.Fprintf(w, "    %s\n", s)
	}
}

func (p Percentiles) String() string {
	if p.N == 0 {
		return "(no jobs)"
	}
	return fmt.Sprintf("p50 %v, p99 %v, max %v (%d jobs)", p.P50.Round(time.Millisecond), p.P99.Round(time.Millisecond), p.Max.Round(time.Millisecond), p.N)
}

func formatReasons(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func formatErrCodes(m map[int]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s %d", c, kv.Error{Code: c}.Name(), m[c]))
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
