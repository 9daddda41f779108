// Package kvtest is the conformance suite for kv.Database engines: one table
// of FoundationDB behaviours that every engine must reproduce exactly, so that
// code written against package kv behaves the same on the embedded engine
// (kv/memkv) and on a real FoundationDB cluster (kv/fdbkv).
//
// Each Case pins one rule of FDB 7.3 (conflict detection, read-your-writes,
// atomic operations, versionstamps, watches, read versions, the 5-second
// window, size limits, range reads and the retry loop), with the FDB source or
// document the rule comes from. The cases were written from FDB's documented
// behaviour and its source, not from any engine, so that they are an
// independent check: a case that fails on memkv but holds on FDB is a memkv
// bug. Every case keeps its keys under Harness.Prefix, interleaves
// transactions deterministically with explicit transactions, and depends on
// time only through Harness.Advance, so the same table runs on both engines.
//
// Case.Run returns an error rather than taking a *testing.T, so a deliberately
// broken engine can be shown to fail. Run wraps the table as subtests.
//
// Running it:
//
//	go test ./kv/memkv/                 # the suite on the embedded engine
//	go test ./kv/kvtest/                # the same, plus the suite's self-tests
//	go test -short ./kv/memkv/          # skips Slow cases
//	go test -tags fdb ./kv/fdbkv/       # the suite on a real FDB cluster
//
// On FDB, Advance sleeps, so Slow cases (the 5-second window, 10,001 watches)
// take real seconds; -short skips them.
//
// An engine's test wires the suite up with a Harness factory:
//
//	func TestConformance(t *testing.T) {
//		kvtest.Run(t, func(t *testing.T) kvtest.Harness {
//			clk := clock.NewFake(time.Now())
//			db := memkv.Open(memkv.Options{Clock: clk})
//			t.Cleanup(func() { db.Close() })
//			return kvtest.Harness{DB: db, Prefix: []byte("t/"), Advance: clk.Advance, Engine: "memkv"}
//		})
//	}
//
// kvtest's own tests also run the suite on memkv (memkv_test.go), check the
// table is well formed (kvtest_test.go), and show that memkv wrapped with
// deliberate FDB violations fails the cases pinning them (broken_test.go).
package kvtest
