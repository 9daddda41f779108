//go:build fdb

package fdbkv_test

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv/kvtest"
)

func TestMain(m *testing.M) { fdbtest.Main(m) }

// TestConformance runs the kv conformance suite on a real cluster (see
// fdbtest for how one is found or started). Each case gets a fresh prefix,
// cleared when it ends; FDB's clock is the wall clock, so Advance sleeps.
func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Harness {
		db, sub := fdbtest.Open(t)
		return kvtest.Harness{
			DB:      db,
			Prefix:  sub.Bytes(),
			Advance: time.Sleep,
			Engine:  "fdb",
		}
	})
}
