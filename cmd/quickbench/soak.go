package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/internal/harness/soak"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// runSoak runs one soak on memkv (clusterFile "") or on the FoundationDB
// cluster clusterFile, in a fresh subspace that it clears afterwards.
func runSoak(ctx context.Context, cfg soak.Config, clusterFile string, log io.Writer) (soak.Report, error) {
	if clusterFile == "" {
		return soak.Run(ctx, cfg, log)
	}
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		if !fdbkv.Built {
			return soak.Report{}, fmt.Errorf("%w (this quickbench was built without FoundationDB support: rebuild with `go build -tags fdb ./cmd/quickbench`, which needs libfdb_c 7.3)", err)
		}
		return soak.Report{}, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	space := tuple.FromTuple(tuple.Tuple{"soak", hex.EncodeToString(b[:])})
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Transact(cctx, func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(space.Bytes()))
			return nil
		}); err != nil {
			fmt.Fprintf(log, "quickbench soak: could not clear %s: %v\n", space, err)
		}
	}()
	rep, err := soak.RunOn(ctx, db, space, cfg, log)
	rep.Engine = "FoundationDB (cluster file " + clusterFile + ")"
	return rep, err
}

// soakCmd runs the soak and its checker; it exits 1 on any violation.
func soakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := baseSoakConfig(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("short", false, "CI soak, about 20 s")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run length: chaos for duration minus a lease, then a drain")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "producers")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "work jobs/s, all producers together")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers alive at a time")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler slots per worker")
	fs.DurationVar(&cfg.KillEvery, "kill-every", cfg.KillEvery, "mean time between kills")
	fs.DurationVar(&cfg.Skew, "skew", cfg.Skew, "worker clock offsets are uniform in ±skew")
	fs.Float64Var(&cfg.PauseShare, "pause", cfg.PauseShare, "share of handler runs that block past their lease")
	fs.Float64Var(&cfg.UnknownCommitted, "unknown-committed", cfg.UnknownCommitted, "share of write commits that apply and report 1021")
	fs.Float64Var(&cfg.UnknownNotCommitted, "unknown-not-committed", cfg.UnknownNotCommitted, "share of write commits dropped with 1021")
	fs.Float64Var(&cfg.Conflict, "conflict", cfg.Conflict, "share of write commits failed with a spurious 1020")
	fs.Float64Var(&cfg.TimedOutCommitted, "timed-out-committed", cfg.TimedOutCommitted, "share of write commits that apply and report 1031 transaction_timed_out")
	fs.Float64Var(&cfg.TimedOutNotCommitted, "timed-out-not-committed", cfg.TimedOutNotCommitted, "share of write commits dropped with 1031 transaction_timed_out")
	fs.Float64Var(&cfg.CancelledCommitted, "cancelled-committed", cfg.CancelledCommitted, "share of write commits that apply and report 1025 transaction_cancelled")
	fs.Float64Var(&cfg.CancelledNotCommitted, "cancelled-not-committed", cfg.CancelledNotCommitted, "share of write commits dropped with 1025 transaction_cancelled")
	fs.Float64Var(&cfg.TransientShare, "transient", cfg.TransientShare, "share of jobs whose first attempt fails")
	fs.Float64Var(&cfg.PoisonShare, "poison", cfg.PoisonShare, "share of jobs that always fail (must end dead-lettered)")
	fs.IntVar(&cfg.CronSchedules, "cron", cfg.CronSchedules, "cron chains")
	fs.StringVar(&cfg.CronSpec, "cron-spec", cfg.CronSpec, "spec of every cron chain")
	fs.Float64Var(&cfg.LargeShare, "large", cfg.LargeShare, "share of jobs with a payload of up to -large-bytes")
	fs.IntVar(&cfg.LargeBytes, "large-bytes", cfg.LargeBytes, "largest payload of a large job")
	fs.Float64Var(&cfg.ExhaustShare, "exhaust", cfg.ExhaustShare, "share of one-attempt jobs whose worker vanishes mid-run")
	fs.DurationVar(&cfg.CronEditEvery, "cron-edit-every", cfg.CronEditEvery, "mean time between edits of a running cron chain (0: none)")
	fs.DurationVar(&cfg.FarSkew, "far-skew", cfg.FarSkew, "run the first worker this far ahead of real time; it must stand by (0 turns it off)")
	fs.String("profile", "plain", "plain (no tenants: one zone per task type) or tenants (tenants with a hot one, short-job type, lane resizing); each starts from its own defaults")
	fs.IntVar(&cfg.Tenants, "tenants", cfg.Tenants, "zones: tenants (item spaces) besides the empty one")
	fs.Float64Var(&cfg.HotShare, "hot", cfg.HotShare, "zones: share of work jobs in the hot tenant")
	fs.Float64Var(&cfg.ShortShare, "short-share", cfg.ShortShare, "zones: share of work jobs of the short-job-mode task type")
	fs.DurationVar(&cfg.ResizeEvery, "resize-every", cfg.ResizeEvery, "zones: mean time between SetZoneLanes calls (0: none)")
	fs.IntVar(&cfg.MaxLanes, "max-lanes", cfg.MaxLanes, "zones: lane counts drawn in [1, max-lanes]")
	fs.DurationVar(&cfg.LaneLease, "lane-lease", cfg.LaneLease, "zones: lane lease (Options.LaneLeaseTime)")
	fs.IntVar(&cfg.AutoIdemProducers, "auto-idem", cfg.AutoIdemProducers, "zones: producers enqueueing with Options.AutomaticIdempotency")
	fs.Float64Var(&cfg.PrefetchRate, "prefetch-rate", cfg.PrefetchRate, "hold jobs/s of the one-slot prefetch type, whose prefetched jobs the harness cancels (0: none)")
	fs.DurationVar(&cfg.PrefetchHold, "prefetch-hold", cfg.PrefetchHold, "how long a hold job keeps its slot: between two thirds of the lease and the lease")
	fs.DurationVar(&cfg.CancelEvery, "cancel-every", cfg.CancelEvery, "how often the harness cancels a prefetched hold job (0: never)")
	fs.Float64Var(&cfg.BatchShare, "batch-share", cfg.BatchShare, "share of enqueues that are batches repeating IDs and mixing given and generated ones")
	fs.DurationVar(&cfg.UnpointEvery, "unpoint-every", cfg.UnpointEvery, "mean time between lanes stripped of their pointer (0: none)")
	fs.BoolVar(&cfg.Limits, "limits", cfg.Limits, "zones: tenant limits (t01 and t02 concurrency 1 and 5, swapped; t05 a rate)")
	fs.DurationVar(&cfg.LimitEvery, "limit-every", cfg.LimitEvery, "zones: how often the limits are swapped while workers run")
	fs.DurationVar(&cfg.MoveEvery, "move-every", cfg.MoveEvery, "zones: mean time between the mover's tenant operations: moves within the database, to a second one and back, adoptions after a byte copy, deletions (0: none)")
	fs.DurationVar(&cfg.MoveStay, "move-stay", cfg.MoveStay, "zones: how long a moved tenant stays in the second database (or, before its adoption, the third) before it comes back")
	fs.IntVar(&cfg.AwayWorkers, "away-workers", cfg.AwayWorkers, "zones: workers serving the mover's second database")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed (the first, with -seeds)")
	seeds := fs.Int("seeds", 1, "run this many soaks, seeds seed, seed+1, ...; exit 1 if any fails")
	fs.BoolVar(&cfg.Verbose, "v", false, "log the queue's, workers' and cron's warnings")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	clusterFile := fs.String("cluster-file", "", "run on this FoundationDB cluster, under (\"soak\", <random id>), cleared at the end (binary built with -tags fdb); default memkv with FDB's latencies")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var reps []soak.Report
	failed := 0
	for i := range max(*seeds, 1) {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		rep, err := runSoak(ctx, c, *clusterFile, stderr)
		if err != nil {
			return fail(stderr, err)
		}
		fmt.Fprintf(stdout, "seed %d:\n", c.Seed)
		rep.WriteSummary(stdout)
		if n := len(rep.Verdict.Violations); n > 0 || rep.DrainStalled {
			fmt.Fprintf(stderr, "quickbench soak: seed %d: %d violations\n", c.Seed, n)
			failed++
		}
		reps = append(reps, rep)
	}
	if *jsonOut != "" {
		var v any = reps
		if len(reps) == 1 {
			v = reps[0]
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, err)
		}
	}
	if len(reps) > 1 {
		soak.WriteTotals(stdout, reps)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// baseSoakConfig picks the defaults the flags start from: the profile's
// (-profile), full or short (-short).
func baseSoakConfig(args []string) (soak.Config, error) {
	short, profile := false, "plain"
	for i, a := range args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "short":
			short = !hasVal || val == "true"
		case "profile":
			if !hasVal && i+1 < len(args) {
				val = args[i+1]
			}
			profile = val
		}
	}
	switch {
	case profile == "tenants" && short:
		return soak.ShortZones(), nil
	case profile == "tenants":
		return soak.Zones(), nil
	case profile != "plain":
		return soak.Config{}, fmt.Errorf("quickbench soak: -profile %q: want plain or tenants", profile)
	case short:
		return soak.Short(), nil
	}
	return soak.Default(), nil
}
