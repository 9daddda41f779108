//go:build fdb

package fdbkv

import (
	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/quickfdb/quickfdb/kv"
)

// fromDatabase is FromDatabase's adapter: New over an fdb.Database.
func fromDatabase(v any) (kv.Database, error) {
	switch d := v.(type) {
	case fdb.Database:
		return New(d), nil
	case *fdb.Database:
		if d != nil {
			return New(*d), nil
		}
	}
	return nil, ErrNotFDB
}

// fromTransaction is FromTransaction's adapter: Wrap over an
// fdb.Transaction.
func fromTransaction(v any) (kv.Transaction, error) {
	switch t := v.(type) {
	case fdb.Transaction:
		return Wrap(t), nil
	case *fdb.Transaction:
		if t != nil {
			return Wrap(*t), nil
		}
	}
	return nil, ErrNotFDB
}

// fromReadTransaction is FromReadTransaction's adapter: WrapRead over an
// fdb.ReadTransaction. The pointer cases come first so a nil pointer (which
// also implements the interface) is refused, not dereferenced.
func fromReadTransaction(v any) (kv.ReadTransaction, error) {
	switch r := v.(type) {
	case *fdb.Transaction:
		if r != nil {
			return WrapRead(*r), nil
		}
	case *fdb.Snapshot:
		if r != nil {
			return WrapRead(*r), nil
		}
	case fdb.ReadTransaction:
		if r != nil {
			return WrapRead(r), nil
		}
	}
	return nil, ErrNotFDB
}
