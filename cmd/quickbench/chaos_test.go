package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// Without -fdb-bin and -cluster-dir the chaos run runs on memkv, workers
// as goroutines, and passes.
func TestChaosOnMemkv(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of several seconds")
	}
	var out, errOut bytes.Buffer
	args := []string{"chaos", "-short", "-baseline", "500ms", "-duration", "2s", "-fault-every", "500ms", "-rate", "100", "-cron-spec", "@every 1s"}
	if code := run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "PASS: 0 lost") || !strings.Contains(out.String(), "commit-fault burst") {
		t.Fatalf("report:\n%s", out.String())
	}
}

func TestChaosBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"chaos", "-rate", "0"},
		{"chaos", "-workers", "0"},
		{"chaos", "-batch", "1000"},
		{"chaos", "extra"},
		{"chaos", "-fdb-bin", "/x", "-cluster-dir", "/y"},
		{chaosWorkerCmdName, "-concurrency", "4"}, // no -id
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code == 0 {
			t.Errorf("%q: exit 0", args)
		}
	}
	if fdbkv.Built {
		return
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"chaos", "-fdb-bin", t.TempDir()}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "built without -tags fdb") {
		t.Errorf("-fdb-bin without the fdb build: exit %d, stderr %q", code, errOut.String())
	}
}
