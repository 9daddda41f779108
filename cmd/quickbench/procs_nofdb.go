//go:build !fdb

package main

import (
	"errors"

	"github.com/quickfdb/quickfdb/kv"
)

// errProcsNoFDB is procs' error in a build without FoundationDB: a drain
// by separate processes needs a database they all reach, which memkv,
// living in one process, is not.
var errProcsNoFDB = errors.New("built without -tags fdb: procs needs a FoundationDB cluster file (rebuild with `go build -tags fdb ./cmd/quickbench`, which needs libfdb_c 7.3)")

func openCluster(string) (kv.Database, error) { return nil, errProcsNoFDB }
