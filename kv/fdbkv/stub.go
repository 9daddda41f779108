//go:build !fdb

package fdbkv

import (
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Built reports whether the package was compiled with the fdb build tag, that
// is with the real adapter. In this build it is false.
const Built = false

// Open would open the FoundationDB database named by clusterFile ("" for the
// default cluster file). This build has no FoundationDB support: it returns
// an error wrapping ErrNotBuilt.
func Open(clusterFile string) (kv.Database, error) {
	return nil, fmt.Errorf("fdbkv: open %q: %w", clusterFile, ErrNotBuilt)
}

// OpenDirectory would resolve path with FoundationDB's directory layer. This
// build has no FoundationDB support: it returns an error wrapping
// ErrNotBuilt.
func OpenDirectory(db kv.Database, path []string) ([]byte, error) {
	return nil, fmt.Errorf("fdbkv: open directory %q: %w", path, ErrNotBuilt)
}

// Without the fdb tag nothing can be adapted: the binding's types are not
// compiled in.
func fromDatabase(any) (kv.Database, error)               { return nil, ErrNotBuilt }
func fromTransaction(any) (kv.Transaction, error)         { return nil, ErrNotBuilt }
func fromReadTransaction(any) (kv.ReadTransaction, error) { return nil, ErrNotBuilt }
