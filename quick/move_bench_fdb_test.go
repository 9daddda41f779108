//go:build fdb

package quick_test

import (
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
)

// BenchmarkMoveTenantFDB is BenchmarkMoveTenant between two real
// FoundationDB clusters (two fdbserver processes on loopback that fdbtest
// starts from QUICKFDB_FDB_BIN, or FDB_CLUSTER_FILE and
// QUICKFDB_SECOND_CLUSTER_FILE): N jobs (QUICK_MOVE_JOBS, default 100,000)
// moved while 16 workers claim and complete from both queues.
//
//	go test -tags fdb -run '^$' -bench BenchmarkMoveTenantFDB -benchtime 1x -timeout 30m ./quick/
func BenchmarkMoveTenantFDB(b *testing.B) {
	n := moveJobs(b)
	a, sa := fdbtest.Open(b)
	bdb, sb := fdbtest.OpenSecond(b)
	for range b.N {
		runMoveUnderLoad(b, a, bdb, sa.Sub("q"), sb.Sub("q"), n, 16).report(b)
	}
}
