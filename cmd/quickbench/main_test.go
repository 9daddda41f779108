package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/internal/bench"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// TestShortBench runs `quickbench bench --short`: every variant in both
// modes at 1 and 16 workers, and the fairness runs. It fails on an
// invariant violation (a job completed or started twice, a lease lost, a
// job claimed that was never enqueued) and checks the outputs are written;
// it asserts nothing about speed.
func TestShortBench(t *testing.T) {
	if testing.Short() {
		t.Skip("about 35 s")
	}
	dir := t.TempDir()
	jsonPath, svgPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.svg")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bench", "--short", "--json", jsonPath, "--svg", svgPath}, &out, &errOut)
	t.Log(out.String())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep bench.Report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if want := len(bench.Variants) * 2 * 2; len(rep.Results) != want {
		t.Fatalf("%d results, want %d", len(rep.Results), want)
	}
	for _, r := range rep.Results {
		if r.Completed == 0 || r.PerJob.Commits == 0 {
			t.Errorf("%s/%s/%d completed nothing: %+v", r.Mode, r.Variant, r.Workers, r)
		}
	}
	if len(rep.FairSum) != len(bench.Variants) {
		t.Errorf("%d fairness results", len(rep.FairSum))
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil || !bytes.Contains(svg, []byte("<polyline")) {
		t.Errorf("svg: %v, %.100s", err, svg)
	}
	if !strings.Contains(out.String(), "zones-16/zones") {
		t.Errorf("no ratio table in:\n%s", out.String())
	}
}

func TestClusterFileWithoutFDBBuild(t *testing.T) {
	if fdbkv.Built {
		t.Skip("built with -tags fdb")
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bench", "--cluster-file", "/nonexistent/fdb.cluster"}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "-tags fdb") {
		t.Fatalf("exit %d, stderr %q: want a clear error naming -tags fdb", code, errOut.String())
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"bench", "--variants", "nope"}, {"bench", "--duration", "gauss:1s"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code == 0 {
			t.Errorf("%q: exit 0", args)
		}
	}
}
