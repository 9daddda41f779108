// Command quick is the operator CLI of quickfdb: it inspects a queue's
// tenants and their zones' lanes, lists, shows, cancels and enqueues jobs, manages dead letters and cron
// schedules, lists live workers, and runs a self-contained demo on the
// embedded engine.
//
// It is a thin layer over the library (packages quick, cron, worker);
// docs/cli.md documents every command, with examples and what each costs.
//
// Connecting: --cluster-file (FDB_CLUSTER_FILE) opens FoundationDB, which
// needs a binary built with -tags fdb and FoundationDB's client library;
// --snapshot FILE (QUICK_SNAPSHOT) opens the queue `quick demo` or `quick
// ui --demo` saved in FILE, without FoundationDB; --embedded uses an empty
// in-process database (for trying a command's flags). The queue lives under --subspace (QUICK_SUBSPACE, a tuple such as
// quick or ("app","jobs")) or a directory layer path --directory
// (QUICK_DIRECTORY).
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, realDeps(), os.Args); err != nil {
		report(os.Stderr, err)
		stop()
		os.Exit(exitCode(err))
	}
}

// errInterrupted is returned by a command stopped by Ctrl-C (or SIGTERM)
// before its work was done.
var errInterrupted = errors.New("interrupted")

// exitCode is the process's exit status for a failed run: 2 for a command
// line the parser refused, 130 (128 + SIGINT, as shells report it) for an
// interrupted command, 1 otherwise.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.Is(err, errInterrupted):
		return 130
	}
	return 1
}
