package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/quickfdb/quickfdb/internal/harness/bench"
)

// scaleCmd runs the scale simulation (bench.ScaleIdle, bench.ScaleClaims)
// for both layouts and prints their tables side by side.
func scaleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ic, cc, wc := bench.DefaultScaleIdle(), bench.DefaultScaleClaims(), bench.DefaultScaleWorkers()
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	layouts := fs.String("layouts", "zones", "layouts to simulate (zones, the one layout)")
	parts := fs.String("parts", "idle,claims", "idle (reads per idle worker, fake clock), claims (conflicts and jobs/s against claimers) and/or workers (worker runtimes, each a process's scanner, draining a no-op backlog: jobs/s and CPU per job against workers)")
	workerCounts := fs.String("worker-counts", joinInts(wc.Workers), "workers: worker runtimes (each with its own scanner, as a process has) per drain")
	fs.IntVar(&wc.Jobs, "worker-jobs", wc.Jobs, "workers: backlog drained at each count")
	fs.IntVar(&wc.Tenants, "worker-tenants", wc.Tenants, "workers: tenants the backlog spreads over")
	fs.IntVar(&wc.Concurrency, "worker-slots", wc.Concurrency, "workers: handler slots per worker")
	fs.IntVar(&ic.Workers, "workers", ic.Workers, "idle: workers")
	fs.IntVar(&ic.Tenants, "tenants", ic.Tenants, "idle: tenants, one future job each")
	fs.IntVar(&ic.Sample, "sample", ic.Sample, "idle: workers whose idle routine is run and measured (0: all)")
	fs.DurationVar(&ic.SimFor, "sim-for", ic.SimFor, "idle: simulated time")
	claimWorkers := fs.String("claim-workers", joinInts(cc.Workers), "claims: claimer counts")
	fs.IntVar(&cc.Tenants, "claim-tenants", cc.Tenants, "claims: tenants with vested jobs")
	fs.IntVar(&cc.PerTenant, "per-tenant", cc.PerTenant, "claims: vested jobs per tenant")
	fs.IntVar(&cc.Max, "max", cc.Max, "claims: jobs per claim")
	fs.DurationVar(&cc.RunFor, "run", cc.RunFor, "claims: run length per claimer count")
	peeks := fs.String("peeks", joinInts(cc.Peeks), "claims: ClaimOptions.Peek values to sweep (zones; 0 = quick's default)")
	headPeeks := fs.String("head-peeks", joinInts(cc.HeadPeeks), "claims: Peek values to sweep with PeekHead, every claim reading the head of the pointer index (zones; the choice before the random start, to compare)")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	var prof profileFlags
	prof.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	stop, err := prof.start()
	if err != nil {
		return fail(stderr, err)
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(stderr, "quickbench:", err)
		}
	}()
	if cc.Workers, err = parseInts(*claimWorkers); err != nil {
		return fail(stderr, err)
	}
	if wc.Workers, err = parseInts(*workerCounts); err != nil {
		return fail(stderr, err)
	}
	if cc.Peeks, err = parseInts(*peeks); err != nil {
		return fail(stderr, err)
	}
	if cc.HeadPeeks, err = parseInts(*headPeeks); err != nil {
		return fail(stderr, err)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
	want := map[string]bool{}
	for _, p := range splitList(*parts) {
		want[p] = true
	}
	var idle []bench.IdleResult
	var claims []bench.ClaimsResult
	for _, l := range splitList(*layouts) {
		if want["idle"] {
			r, err := bench.ScaleIdle(ctx, ic, l)
			if err != nil {
				return fail(stderr, err)
			}
			logf("scale idle %s: done in %.0fs", l, r.WallS)
			idle = append(idle, r)
		}
	}
	for _, l := range splitList(*layouts) {
		if want["claims"] {
			rs, err := bench.ScaleClaims(ctx, cc, l, logf)
			if err != nil {
				return fail(stderr, err)
			}
			claims = append(claims, rs...)
		}
	}
	var workers []bench.WorkersResult
	if want["workers"] {
		rs, err := bench.ScaleWorkers(ctx, wc, logf)
		if err != nil {
			return fail(stderr, err)
		}
		workers = rs
	}
	if len(idle) > 0 {
		fmt.Fprintf(stdout, "== idle: %d workers (%d measured), %d tenants with a job vesting in 1h, %v simulated on memkv with a fake clock; per worker per simulated second ==\n",
			ic.Workers, idle[0].Sampled, ic.Tenants, ic.SimFor)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "layout\tgrv/s\tpoint reads/s\trange reads/s\tkeys read/s\tbytes read/s\tmutations/s\tcommits/s\twall s\t")
		for _, r := range idle {
			p := r.PerWorkerSec
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.0f\t%.2f\t%.2f\t%.0f\t\n", r.Layout, p.ReadVersions, p.Reads, p.RangeReads, p.KeysRead, p.BytesRead, p.Mutations, p.Commits, r.WallS)
		}
		tw.Flush()
	}
	if len(claims) > 0 {
		fmt.Fprintf(stdout, "\n== claims: %d tenants x %d vested jobs, claim (Max %d) then ack at once, %v per claimer count, memkv with FDB latencies, the queue's clock frozen; cpu: this process's CPU s (getrusage) per wall s, ceiling GOMAXPROCS = %d; machine: every process's (/proc/stat) of %d cores, niced: the part at positive nice; rq wait: this process's threads runnable and waiting for a core (schedstat), s per wall s ==\n",
			cc.Tenants, cc.PerTenant, cc.Max, cc.RunFor, claims[0].GOMAXPROCS, claims[0].NumCPU)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "layout\tpeek\tstart\tclaimers\tjobs/s\tclaim commits/s\tconfl/claim commit\tjobs/claim\tclaim keys read/job\terrs\tcpu s/wall s\tcpu s/1k jobs\tmachine cpu s/wall s\tniced\trq wait s/wall s\t")
		for _, r := range claims {
			peek, start := "-", "-"
			if r.Layout == "zones" {
				peek, start = "default", "random"
				if r.Peek > 0 {
					peek = fmt.Sprint(r.Peek)
				}
				if r.PeekHead {
					start = "head"
				}
			}
			cpu, per1k, mach, niced := "-", "-", "-", "-"
			if r.CPUPerWallS > 0 {
				cpu, per1k = fmt.Sprintf("%.2f", r.CPUPerWallS), fmt.Sprintf("%.3f", r.CPUPer1kJobs)
			}
			rq := "-"
			if r.RunQueueWaitPerWallS >= 0 {
				rq = fmt.Sprintf("%.2f", r.RunQueueWaitPerWallS)
			}
			if r.MachinePerWallS > 0 {
				mach, niced = fmt.Sprintf("%.2f", r.MachinePerWallS), fmt.Sprintf("%.2f", r.NicedPerWallS)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%.0f\t%.4f\t%.2f\t%.1f\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Layout, peek, start, r.Workers, r.JobsPerSec, r.ClaimsPerSec, r.ConflictRate, r.JobsPerClaim, r.KeysPerJob, r.Errors, cpu, per1k, mach, niced, rq)
			if r.FirstError != "" {
				logf("%s/%d: first error: %s", r.Layout, r.Workers, r.FirstError)
			}
		}
		tw.Flush()
	}
	if len(workers) > 0 {
		fmt.Fprintf(stdout, "\n== workers: %d no-op jobs over %d tenants drained by worker runtimes of %d slots (each its own scanner, acker and keeper, as a process has) in this one process, memkv with FDB latencies; jobs/s from the first start to the last; cpu: this process's CPU s (getrusage), GOMAXPROCS = %d ==\n",
			wc.Jobs, wc.Tenants, wc.Concurrency, workers[0].GOMAXPROCS)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workers\tjobs/s\tcpu s/1k jobs\tcpu s/wall s\tmachine cpu s/wall s\tcommits/job\tconflicts/job\tclaims/job\tacks in claims\tready s\t")
		for _, r := range workers {
			fmt.Fprintf(tw, "%d\t%.0f\t%.3f\t%.2f\t%.2f\t%.4f\t%.4f\t%.4f\t%.2f\t%.1f\t\n", r.Workers, r.JobsPerSec, r.CPUPer1kJobs, r.CPUPerWallS, r.MachinePerS, r.CommitsPer, r.ConflictsPer, r.ClaimsPer, r.ClaimAcks, r.StartS)
		}
		tw.Flush()
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"idle_config": ic, "idle": idle, "claims_config": cc, "claims": claims, "workers_config": wc, "workers": workers}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	return 0
}
