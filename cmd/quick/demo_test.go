package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDemoSmoke runs the demo briefly: the --duration bound ends it (the
// killed worker's jobs wait for 10 s leases) and it still exits 0 with a
// summary saying what remained.
func TestDemoSmoke(t *testing.T) {
	h := newHarness(t)
	start := time.Now()
	r := h.run("demo", "--jobs", "40", "--workers", "2", "--duration", "2s", "--speed", "4")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("demo took %v with a 2s bound", el)
	}
	if !strings.Contains(r.stdout, "summary: ") || !strings.Contains(r.stdout, "FDB operations per job") {
		t.Errorf("no summary:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("ANSI codes written to a non-terminal")
	}
}

// TestDemoDrains: without the kill, a small demo drains well before its bound.
func TestDemoDrains(t *testing.T) {
	h := newHarness(t)
	r := h.run("demo", "--jobs", "30", "--kill=false", "--duration", "20s", "--speed", "5", "-o", "json")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s", r.err, r.stderr)
	}
	var s demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if !s.Drained || s.Completed+s.DeadLetters != 30 || s.Stats.Commits == 0 || s.Killed != "" {
		t.Errorf("summary: %+v", s)
	}
	if !strings.Contains(r.stderr, "enqueued 30 jobs") {
		t.Errorf("progress lines go to stderr with -o json: %q", r.stderr)
	}
	h.fails("invalid --jobs 0", "demo", "--jobs", "0")
	h.fails("invalid --speed", "demo", "--speed", "0")
}
