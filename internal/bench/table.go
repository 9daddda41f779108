package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as plain-text tables: one per mode, the
// throughput ratios, and the fairness figures.
func (r Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "engine: %s\nmachine: %s\n", r.Engine, r.Machine)
	c := r.Config
	fmt.Fprintf(w, "workload: concurrency %d/worker, durations %s, payload %d B, delayed %.0f%% (<= %v), failing %.0f%%, backlog %d, rate %.0f/s, %d producers, run %v, seed %d\n",
		c.Concurrency, c.Duration, c.Payload, 100*c.DelayShare, c.MaxDelay, 100*c.FailShare, c.Backlog, c.Rate, c.Producers, c.RunLength, c.Seed)
	fmt.Fprintln(w, "wall times are on the engine above; kv figures are per completed job (enqueue + claim + ack)")
	if c.Reps > 1 {
		fmt.Fprintf(w, "each cell ran %d times, interleaved: jobs/s and confl/claim are median (min-max); the other columns are medians\n", c.Reps)
	}
	cells := r.Cells()
	for _, mode := range c.Modes {
		fmt.Fprintf(w, "\n== %s ==\n", mode)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "variant\tworkers\tjobs/s\t(range)\tconfl/claim\t(range)\tstart p50 ms\tp99\tp99.9\tgrv\treads\trange\tkeys\tmuts\tbytes w\tcommits\terrs\t")
		for _, cl := range cells {
			if cl.Mode != mode {
				continue
			}
			p := cl.PerJob
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%.3f\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.0f\t%.2f\t%d\t\n",
				cl.Variant, cl.Workers, cl.JobsPS.Median, rangeStr(cl.JobsPS, "%.0f"), cl.Conflict.Median, rangeStr(cl.Conflict, "%.3f"),
				cl.StartP50, cl.StartP99, cl.StartP999,
				p.ReadVersions, p.Reads, p.RangeReads, p.KeysRead, p.Mutations, p.BytesWritten, p.Commits, cl.Errors)
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

func rangeStr(s Spread, f string) string {
	if s.N < 2 {
		return ""
	}
	return "(" + fmt.Sprintf(f, s.Min) + "-" + fmt.Sprintf(f, s.Max) + ")"
}

// writeRatios prints lanes' throughput over each other variant's, and the
// zones layout's over lanes', per mode and worker count: ratios of the
// cells' medians from one run on one engine, with the range over the
// pairings of their repetitions.
func (r Report) writeRatios(w io.Writer) {
	cells := r.Cells()
	find := func(mode Mode, v string, n int) (Cell, bool) {
		for _, c := range cells {
			if c.Mode == mode && c.Variant == v && c.Workers == n {
				return c, true
			}
		}
		return Cell{}, false
	}
	type pair struct{ num, den string }
	var pairs []pair
	for _, v := range r.Config.Variants {
		if v != "zones" && slices.Contains(r.Config.Variants, "zones") {
			pairs = append(pairs, pair{v, "zones"})
		}
	}
	fmt.Fprintln(w, "\n== throughput ratios (median of one over median of the other; range over the repetitions' pairings) ==")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "mode\tworkers\t")
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s/%s\t", p.num, p.den)
	}
	fmt.Fprintln(tw)
	for _, mode := range r.Config.Modes {
		for _, n := range r.Config.Workers {
			fmt.Fprintf(tw, "%s\t%d\t", mode, n)
			for _, p := range pairs {
				a, ok1 := find(mode, p.num, n)
				b, ok2 := find(mode, p.den, n)
				rt, ok3 := ratioOf(a.JobsPS, b.JobsPS)
				switch {
				case !ok1 || !ok2 || !ok3:
					fmt.Fprint(tw, "-\t")
				case a.JobsPS.N > 1 || b.JobsPS.N > 1:
					fmt.Fprintf(tw, "%.2fx (%.2f-%.2f)\t", rt.Median, rt.Low, rt.High)
				default:
					fmt.Fprintf(tw, "%.2fx\t", rt.Median)
				}
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
}
