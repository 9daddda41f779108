//go:build fdb

package fdbkv

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/quickfdb/quickfdb/kv"
)

// These tests need no cluster: they check the error and option conversions.

func TestConvertErr(t *testing.T) {
	if convertErr(nil) != nil {
		t.Fatal("convertErr(nil) != nil")
	}
	plain := errors.New("not fdb")
	if convertErr(plain) != plain {
		t.Fatal("a non-FDB error was changed")
	}

	err := convertErr(fdb.Error{Code: 1020})
	if !errors.Is(err, kv.ErrNotCommitted) || kv.Code(err) != 1020 || !kv.IsRetryable(err) {
		t.Fatalf("converted 1020: %v does not match kv.ErrNotCommitted", err)
	}
	var ke kv.Error
	if !errors.As(err, &ke) || ke.Code != 1020 {
		t.Fatalf("errors.As into kv.Error: %v", ke)
	}
	var fe fdb.Error
	if !errors.As(err, &fe) || fe.Code != 1020 {
		t.Fatalf("errors.As into fdb.Error: %v", fe)
	}
	if err.Error() != (kv.Error{Code: 1020}).Error() {
		t.Fatalf("message %q, want kv's", err)
	}

	wrapped := convertErr(fmt.Errorf("directory: %w", fdb.Error{Code: 1007}))
	if !errors.Is(wrapped, kv.ErrTransactionTooOld) || kv.Code(wrapped) != 1007 {
		t.Fatalf("wrapped 1007: %v", wrapped)
	}
	if !errors.As(wrapped, &fe) || fe.Code != 1007 {
		t.Fatalf("wrapped 1007 lost its fdb.Error: %v", fe)
	}
}

func TestDuringCommitSurvivesCodeError(t *testing.T) {
	err := error(codeError{kv.Error{Code: 1031, DuringCommit: true}})
	if !kv.IsMaybeCommitted(err) || !errors.Is(err, kv.ErrTransactionTimedOut) {
		t.Fatalf("%v: want maybe-committed 1031", err)
	}
	if kv.IsMaybeCommitted(codeError{kv.Error{Code: 1031}}) {
		t.Fatal("1031 outside a commit reported maybe-committed")
	}
}

func TestRangeOptions(t *testing.T) {
	for _, c := range []struct {
		in   kv.RangeOptions
		want fdb.RangeOptions
	}{
		{kv.RangeOptions{}, fdb.RangeOptions{Mode: fdb.StreamingModeIterator}},
		{kv.RangeOptions{Reverse: true}, fdb.RangeOptions{Mode: fdb.StreamingModeIterator, Reverse: true}},
		{kv.RangeOptions{Limit: 10}, fdb.RangeOptions{Limit: 10, Mode: fdb.StreamingModeExact}},
		{kv.RangeOptions{Limit: 3, Reverse: true}, fdb.RangeOptions{Limit: 3, Mode: fdb.StreamingModeExact, Reverse: true}},
	} {
		if got := rangeOptions(c.in); got != c.want {
			t.Errorf("rangeOptions(%+v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}
