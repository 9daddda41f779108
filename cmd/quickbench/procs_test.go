package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// procsChildEnv makes the test binary run quickbench's command line
// instead of the tests: the procs tests' children are this binary.
const procsChildEnv = "QUICKBENCH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(procsChildEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	fdbtest.Main(m)
}

func TestProcsWithoutFDBBuild(t *testing.T) {
	if fdbkv.Built {
		t.Skip("built with -tags fdb")
	}
	for _, args := range [][]string{
		{"procs", "--cluster-file", "/nonexistent/fdb.cluster"},
		{procsWorkerCmdName, "--cluster-file", "/nonexistent/fdb.cluster", "--id", "p00"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), "built without -tags fdb: procs needs a FoundationDB cluster file") {
			t.Errorf("%q: exit %d, stderr %q: want the error naming -tags fdb", args, code, errOut.String())
		}
	}
}

func TestProcsBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"procs", "--procs", "1,x"},
		{"procs", "--procs", "0"},
		{"procs", "--complete", "never"},
		{"procs", "--duration", "gauss:1ms"},
		{"procs", "extra"},
		{procsWorkerCmdName, "--concurrency", "4"}, // no -id
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code == 0 {
			t.Errorf("%q: exit 0", args)
		} else if strings.Contains(errOut.String(), "-tags fdb") {
			t.Errorf("%q: the arguments should be refused before the database is opened: %s", args, errOut.String())
		}
	}
}

func TestUsageNamesProcs(t *testing.T) {
	var out bytes.Buffer
	usage(&out)
	if !strings.Contains(out.String(), "quickbench procs") || strings.Contains(out.String(), procsWorkerCmdName) {
		t.Errorf("usage should list procs and hide %s:\n%s", procsWorkerCmdName, out.String())
	}
}
