package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as plain-text tables: one per mode, the
// throughput ratios, and the fairness figures.
func (r Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "engine: %s\nmachine: %s\n", r.Engine, r.Machine)
	c := r.Config
	fmt.Fprintf(w, "workload: concurrency %d/worker, durations %s, payload %d B, delayed %.0f%% (<= %v), failing %.0f%%, backlog %d, rate %.0f/s, %d producers, %d lanes, K=%d, run %v, seed %d\n",
		c.Concurrency, c.Duration, c.Payload, 100*c.DelayShare, c.MaxDelay, 100*c.FailShare, c.Backlog, c.Rate, c.Producers, c.Lanes, c.K, c.RunLength, c.Seed)
	fmt.Fprintln(w, "wall times are on the engine above; kv figures are per completed job (enqueue + claim + ack)")
	for _, mode := range c.Modes {
		fmt.Fprintf(w, "\n== %s ==\n", mode)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "variant\tworkers\tjobs/s\tconfl/claim\tstart p50 ms\tp99\tp99.9\tgrv\treads\trange\tkeys\tmuts\tbytes w\tcommits\terrs\t")
		for _, res := range r.Results {
			if res.Mode != mode {
				continue
			}
			p := res.PerJob
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.0f\t%.2f\t%d\t\n",
				res.Variant, res.Workers, res.JobsPerSec, res.ConflictRate,
				res.EnqueueToStart.P50, res.EnqueueToStart.P99, res.EnqueueToStart.P999,
				p.ReadVersions, p.Reads, p.RangeReads, p.KeysRead, p.Mutations, p.BytesWritten, p.Commits, res.Errors)
		}
		tw.Flush()
	}
	r.writeRatios(w)
	if len(r.FairSum) > 0 {
		fmt.Fprintf(w, "\n== fairness: %d workers, %.0f jobs/s, one item space of %d enqueuing %dx each other's, %.0f%% slow jobs (%v), %v ==\n",
			c.FairWorkers, c.FairRate, c.FairSpaces, c.FairHotFactor, 100*c.FairSlowShare, c.FairSlow, c.FairRun)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "variant\tjobs/s\twait p50 ms\tp99\tmax started\tlongest (incl. waiting)\tstill waiting\thot p99\tworst cold p99\tlongest/p99\t")
		for _, s := range r.FairSum {
			fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Variant, s.JobsPerSec, s.Wait.P50, s.Wait.P99, s.Wait.Max,
				s.LongestWaitMs, s.Unstarted, s.HotP99, s.ColdP99, s.MaxOverP99)
		}
		tw.Flush()
	}
	if v := r.Violations(); len(v) > 0 {
		fmt.Fprintf(w, "\nVIOLATIONS (%d):\n  %s\n", len(v), strings.Join(v, "\n  "))
	}
}

// writeRatios prints lanes' throughput over each other variant's, per mode
// and worker count: ratios from one run on one engine.
func (r Report) writeRatios(w io.Writer) {
	find := func(mode Mode, v string, n int) (Result, bool) {
		for _, res := range r.Results {
			if res.Mode == mode && res.Variant == v && res.Workers == n {
				return res, true
			}
		}
		return Result{}, false
	}
	fmt.Fprintln(w, "\n== throughput ratios (lanes / other) ==")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "mode\tworkers\t")
	for _, v := range r.Config.Variants {
		if v != "lanes" {
			fmt.Fprintf(tw, "lanes/%s\t", v)
		}
	}
	fmt.Fprintln(tw)
	for _, mode := range r.Config.Modes {
		for _, n := range r.Config.Workers {
			l, ok := find(mode, "lanes", n)
			if !ok {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t", mode, n)
			for _, v := range r.Config.Variants {
				if v == "lanes" {
					continue
				}
				if o, ok := find(mode, v, n); ok && o.JobsPerSec > 0 {
					fmt.Fprintf(tw, "%.2fx\t", l.JobsPerSec/o.JobsPerSec)
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
}
