//go:build !fdb

package fdbtest

import (
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// The memkv database shared by the process's tests, created on first use.
var (
	memMu sync.Mutex
	memDB *memkv.DB
)

func openDB(t testing.TB) kv.Database {
	memMu.Lock()
	defer memMu.Unlock()
	if memDB == nil {
		memDB = memkv.Open(memkv.Options{})
	}
	return memDB
}

func shutdown() {
	memMu.Lock()
	defer memMu.Unlock()
	if memDB != nil {
		_ = memDB.Close()
		memDB = nil
	}
}

// ClusterFile skips t: memkv lives in the test process, and there is no
// cluster file another process could open. Build with -tags fdb.
func ClusterFile(t testing.TB) string {
	t.Helper()
	t.Skip("fdbtest: no cluster file on memkv, which other processes cannot reach: build with -tags fdb")
	return ""
}
