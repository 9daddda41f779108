package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/quickfdb/quickfdb/internal/bench"
)

// tenantsCmd runs the noisy-neighbour workload (bench.Tenants): one
// tenant's big backlog, then many small tenants' single jobs, and prints the
// small jobs' waits per layout.
func tenantsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := bench.DefaultTenants()
	fs := flag.NewFlagSet("tenants", flag.ContinueOnError)
	fs.SetOutput(stderr)
	variants := fs.String("variants", strings.Join(c.Variants, ","), "claim strategies: zones,zones-16 (any of quickbench bench's)")
	fs.IntVar(&c.Workers, "workers", c.Workers, "workers")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "handler slots per worker")
	fs.IntVar(&c.Backlog, "backlog", c.Backlog, "the big tenant's backlog")
	fs.IntVar(&c.Small, "small", c.Small, "small tenants, one job each")
	fs.IntVar(&c.SmallBatch, "small-batch", c.SmallBatch, "small jobs per enqueue transaction")
	dur := fs.String("duration", c.Duration.String(), "job duration distribution, fixed|uniform|exp:mean")
	fs.IntVar(&c.Payload, "payload", c.Payload, "payload bytes")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "workers run the backlog this long before the small jobs are enqueued")
	fs.DurationVar(&c.Wait, "wait", c.Wait, "give up on the small jobs this long after they were enqueued")
	fs.IntVar(&c.Loaders, "loaders", c.Loaders, "goroutines enqueueing the backlog")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "engine seed")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var err error
	if c.Duration, err = bench.ParseDist(*dur); err != nil {
		return fail(stderr, err)
	}
	c.Variants = splitList(*variants)
	eng := bench.MemEngine(int64(c.Seed))
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
	res, err := bench.Tenants(ctx, eng, c, logf)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "engine: %s\n", eng.Name)
	fmt.Fprintf(stdout, "== tenants: one tenant with %d jobs, then %d tenants with one job each (enqueued %v after %d workers x %d slots started on the backlog), durations %s, payload %d B ==\n",
		c.Backlog, c.Small, c.Warmup, c.Workers, c.Concurrency, c.Duration, c.Payload)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tpreload s\tsmall started\twait p50 ms\tp99\tmax started\tnot started\tlongest ms (incl. not started)\tbacklog jobs/s\terrs\t")
	bad := 0
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t%d\t%.0f\t%.0f\t%d\t\n", r.Variant, r.PreloadS, r.SmallWait.N,
			r.SmallWait.P50, r.SmallWait.P99, r.SmallWait.Max, r.SmallUnstarted, r.LongestMs, r.BigJobsPerSec, r.Errors)
		bad += len(r.Violations)
		if r.FirstError != "" {
			fmt.Fprintf(stderr, "%s: first error: %s\n", r.Variant, r.FirstError)
		}
	}
	tw.Flush()
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"config": c, "results": res}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "quickbench: %d invariant violations\n", bad)
		return 1
	}
	return 0
}
