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
