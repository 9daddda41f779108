// Command quick is the operator CLI of quickfdb: it inspects a queue's lanes,
// lists, shows, cancels and enqueues jobs, manages dead letters and cron
// schedules, lists live workers, and runs a self-contained demo on the
// embedded engine.
//
// It is a thin layer over the library (packages quick, lanes, cron, worker);
// docs/cli.md documents every command, with examples and what each costs.
//
// Connecting: --cluster-file (FDB_CLUSTER_FILE) opens FoundationDB, which
// needs a binary built with -tags fdb and FoundationDB's client library;
// --embedded uses an empty in-process database instead (for trying commands
// out). The queue lives under --subspace (QUICK_SUBSPACE, a tuple such as
// quick or ("app","jobs")) or a directory layer path --directory
// (QUICK_DIRECTORY).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(realDeps())
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "quick: %v\n", err)
		stop()
		os.Exit(1)
	}
}
