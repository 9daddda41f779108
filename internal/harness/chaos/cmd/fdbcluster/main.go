// Command fdbcluster starts, inspects, breaks and stops a local
// multi-process FoundationDB cluster (package
// internal/harness/chaos/cluster). Run it through scripts/fdb-cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster"
)

func main() {
	if err := cluster.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fdb-cluster:", err)
		}
		os.Exit(1)
	}
}
