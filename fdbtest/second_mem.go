//go:build !fdb

package fdbtest

import (
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// OpenSecond returns a second database, apart from Open's (a private
// memkv database in this build; another FoundationDB cluster with the fdb
// build tag), and a fresh subspace of it, cleared and closed when t ends.
func OpenSecond(t testing.TB) (kv.Database, tuple.Subspace) {
	t.Helper()
	return OpenMem(t, memkv.Options{})
}
