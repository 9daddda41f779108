package kvtest_test

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv/kvtest"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// TestConformanceMemkv runs the suite on the embedded engine, each case on a
// fresh database with a manual clock. (memkv's own conformance test does the
// same from its package; this one keeps kvtest's tests self-contained.)
func TestConformanceMemkv(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Harness {
		clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		db := memkv.Open(memkv.Options{Clock: clk})
		t.Cleanup(func() { db.Close() })
		return kvtest.Harness{
			DB:      db,
			Prefix:  []byte("kvtest\x00"),
			Advance: clk.Advance,
			Engine:  "memkv",
		}
	})
}
