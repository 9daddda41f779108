//go:build fdb

package fdbtest

import (
	"os"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// EnvSecondClusterFile names the cluster file of a second running cluster
// for OpenSecond (tests that move data between two clusters); without it
// OpenSecond starts a throwaway fdbserver of its own.
const EnvSecondClusterFile = "QUICKFDB_SECOND_CLUSTER_FILE"

// OpenSecond returns a second database, another FoundationDB cluster than
// Open's (another fdbserver process on loopback, started for t and stopped
// when t ends, or the cluster of QUICKFDB_SECOND_CLUSTER_FILE), and a fresh
// subspace of it cleared when t ends. It skips t when no fdbserver and
// fdbcli are found and no second cluster file is given.
func OpenSecond(t testing.TB) (kv.Database, tuple.Subspace) {
	t.Helper()
	if cf := os.Getenv(EnvSecondClusterFile); cf != "" {
		db, err := fdbkv.Open(cf)
		if err != nil {
			t.Fatalf("fdbtest: %s=%s: %v", EnvSecondClusterFile, cf, err)
		}
		if err := probe(db); err != nil {
			t.Fatalf("fdbtest: %s=%s: the cluster does not answer: %v", EnvSecondClusterFile, cf, err)
		}
		return db, newSubspace(t, db)
	}
	bins, missing := findBinaries()
	if len(missing) > 0 {
		t.Skipf("a second FoundationDB cluster is needed: set %s, or put fdbserver and fdbcli on PATH (or %s) (missing: %s)",
			EnvSecondClusterFile, EnvBinDir, strings.Join(missing, ", "))
	}
	srv, db, err := startServer(bins)
	if err != nil {
		t.Fatalf("fdbtest: starting a second throwaway fdbserver (%s): %v", bins.server, err)
	}
	t.Cleanup(func() { srv.stop(os.Getenv(EnvKeep) != "") })
	// Registered after the server's stop, so it runs before it.
	sub := newSubspace(t, db)
	return db, sub
}
