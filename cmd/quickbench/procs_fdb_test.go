//go:build fdb

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/harness/procbench"
)

// TestProcsOnFDB runs `quickbench procs` for real: worker processes (this
// test binary, through procsChildEnv) on the test's FoundationDB (fdbtest:
// FDB_CLUSTER_FILE or a throwaway server from QUICKFDB_FDB_BIN), draining
// 200 jobs with 1 and then 2 processes counted by the counter key, and
// with 2 processes completing by batched acks. Every row
// must count the backlog exactly (procbench checks it, and that the queue
// is left empty) and report the children's CPU time and kv counts.
func TestProcsOnFDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes against FoundationDB")
	}
	cf := fdbtest.ClusterFile(t)
	t.Setenv(procsChildEnv, "1") // the children inherit it
	for _, c := range []struct{ complete, procs string }{
		{procbench.CompleteWith, "1,2"},
		{procbench.CompleteAck, "2"},
	} {
		t.Run(c.complete, func(t *testing.T) {
			dir := t.TempDir()
			jsonPath := filepath.Join(dir, "rows.json")
			args := []string{"procs", "--cluster-file", cf, "--procs", c.procs, "--jobs", "200",
				"--complete", c.complete, "--duration", "exp:5ms", "--settle", "1500ms",
				"--timeout", "2m", "--subspace", fmt.Sprintf("quickbench-test,procs,%d", time.Now().UnixNano()),
				"--log-dir", filepath.Join(dir, "logs"), "--json", jsonPath}
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, &out, &errOut)
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			if code != 0 {
				for _, name := range []string{"p00", "p01"} {
					if b, err := os.ReadFile(filepath.Join(dir, "logs", name+".log")); err == nil {
						t.Logf("%s.log:\n%s", name, b)
					}
				}
				t.Fatalf("exit %d", code)
			}
			b, err := os.ReadFile(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct{ Rows []procbench.Row }
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			want := len(bytes.Split([]byte(c.procs), []byte(",")))
			if len(rep.Rows) != want {
				t.Fatalf("%d rows, want %d", len(rep.Rows), want)
			}
			for _, r := range rep.Rows {
				if r.Completed != 200 || r.JobsPerSec <= 0 || r.CPUS <= 0 || r.PerJob.Commits <= 0 {
					t.Errorf("row %+v: want 200 completed, positive jobs/s, CPU and commits", r)
				}
			}
		})
	}
}
