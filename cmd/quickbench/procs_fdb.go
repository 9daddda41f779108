//go:build fdb

package main

import (
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// openCluster opens the FoundationDB database procs and its children run
// on.
func openCluster(clusterFile string) (kv.Database, error) {
	return fdbkv.Open(clusterFile)
}
