// Command killcheck checks that quickfdb survives processes that die for
// real: a worker killed with SIGKILL mid-job, and the fdbserver killed and
// restarted mid-run (see package internal/harness/killcheck). Run it through
// scripts/fdb-kill-check, which builds it with -tags fdb.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/quickfdb/quickfdb/internal/harness/killcheck"
)

func main() {
	err := killcheck.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "killcheck:", err)
		}
		os.Exit(1)
	}
}
