package memkv_test

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv/kvtest"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// TestConformance runs the kv conformance suite (the FDB behaviours every
// engine must reproduce) on a fresh database with a manual engine clock for
// each case.
func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Harness {
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		db := memkv.Open(memkv.Options{Clock: clk})
		t.Cleanup(func() { _ = db.Close() })
		return kvtest.Harness{
			DB:      db,
			Prefix:  []byte("conformance/"),
			Advance: clk.Advance,
			Engine:  "memkv",
		}
	})
}
