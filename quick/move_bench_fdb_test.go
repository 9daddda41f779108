//go:build fdb

package quick_test

import (
	"os"
	"strconv"
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
	n := 100_000
	if s := os.Getenv("QUICK_MOVE_JOBS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	a, sa := fdbtest.Open(b)
	bdb, sb := fdbtest.OpenSecond(b)
	for range b.N {
		r := runMoveUnderLoad(b, a, bdb, sa.Sub("q"), sb.Sub("q"), n, 16)
		b.ReportMetric(float64(r.lost), "lost")
		b.ReportMetric(float64(r.completed), "completed")
		b.ReportMetric(float64(r.twice), "run-twice")
		b.ReportMetric(r.move.Seconds(), "move-s")
		b.ReportMetric(r.drain.Seconds(), "all-done-s")
		b.ReportMetric(float64(r.errs), "worker-retries")
	}
}
