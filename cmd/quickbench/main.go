// Command quickbench measures quickfdb against the alternatives and breaks
// it on purpose.
//
//	quickbench bench [flags]   throughput, latency, conflicts and kv cost per
//	                           job of each claim strategy (internal/harness/bench)
//	quickbench tenants [flags] one tenant's big backlog against many small
//	                           tenants' single jobs: the small jobs' waits
//	quickbench scale [flags]   2,000 workers and 100,000 tenants simulated:
//	                           idle reads per worker, claim conflicts and
//	                           jobs/s against the number of workers
//	quickbench soak [flags]    producers, workers and cron under kills, 1021s,
//	                           conflicts, clock skew and paused workers, then
//	                           a checker over the history (internal/harness/soak)
//	quickbench procs [flags]   a backlog drained by 1, 4, 16 worker processes
//	                           on a FoundationDB cluster: wall time, jobs/s,
//	                           the children's CPU and kv counts per job
//	                           (internal/harness/procbench)
//	quickbench chaos [flags]   producers, 4 worker processes and cron on a
//	                           local multi-process cluster while server
//	                           processes are killed, excluded, the
//	                           coordinators changed, then a checker
//	                           (internal/harness/chaos)
//
// Bench, tenants, scale and soak run on memkv with FoundationDB's published
// latencies injected; bench and soak run on a real cluster with
// --cluster-file, and procs only there, which needs a binary built with
// -tags fdb.
// docs/performance.md has the commands and the figures.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "soak":
		return soakCmd(ctx, args[1:], stdout, stderr)
	case "tenants":
		return tenantsCmd(ctx, args[1:], stdout, stderr)
	case "scale":
		return scaleCmd(ctx, args[1:], stdout, stderr)
	case "procs":
		return procsCmd(ctx, args[1:], stdout, stderr)
	case procsWorkerCmdName: // procs' children; not in the usage
		return procsWorkerCmd(ctx, args[1:], stdout, stderr)
	case "chaos":
		return chaosCmd(ctx, args[1:], stdout, stderr)
	case chaosWorkerCmdName: // chaos's worker processes; not in the usage
		return chaosWorkerCmd(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "quickbench: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: quickbench bench [flags]   (quickbench bench -h for flags)
       quickbench soak [flags]    (quickbench soak -h for flags)
       quickbench tenants [flags] (one tenant's big backlog against many small tenants)
       quickbench scale [flags]   (idle reads per worker and claims against workers, simulated)
       quickbench procs [flags]   (a backlog drained by 1, 4, 16 worker processes on FoundationDB; needs -tags fdb)
       quickbench chaos [flags]   (queue under server faults on a local FoundationDB cluster, -fdb-bin; memkv without; then a checker)`)
}
