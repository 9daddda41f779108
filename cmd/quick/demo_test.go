package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// TestDemoSmoke runs the demo briefly: a short --duration bound ends it
// or it drains, and either way it exits 0 with a summary.
func TestDemoSmoke(t *testing.T) {
	h := newHarness(t)
	r := h.run("demo", "--jobs", "40", "--workers", "2", "--duration", "2s", "--speed", "4")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s%s", r.err, r.stdout, r.stderr)
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
	r := h.run("demo", "--jobs", "30", "--kill=false", "--duration", "60s", "--speed", "5", "-o", "json")
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
	h.fails("invalid --fast-forward", "demo", "--fast-forward", "0.5")
}

// TestDemoStory: with the kill, the story plays out in full: the killed
// worker's jobs are taken over (the imports from their checkpoints), a
// long export's lease is renewed by the lease keeper, and the demo's clock
// fast-forwards the wait for the dead worker's leases instead of idling
// for 10 s (the demo clock runs ahead of the wall clock).
func TestDemoStory(t *testing.T) {
	h := newHarness(t)
	r := h.run("demo", "--jobs", "60", "--workers", "3", "--duration", "120s", "--speed", "4", "-o", "json", "--verbose")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s", r.err, r.stderr)
	}
	// The engine's versions keep the demo clock's pace: no worker's clock
	// check mistakes the fast-forward for skew and stands it by.
	if strings.Contains(r.stderr, "standby=true") || strings.Contains(r.stderr, "clock too far") {
		t.Errorf("a worker stood by for clock skew on the demo's one clock:\n%s", grepLines(r.stderr, "clock"))
	}
	var s demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	var renewals, checkpoints int64
	for _, w := range s.Workers {
		renewals += w.LeaseRenewals
		checkpoints += w.Checkpoints
	}
	if !s.Drained || s.Completed+s.DeadLetters != 60 || s.Killed == "" || s.Takeovers < 1 {
		t.Errorf("summary: %+v\n%s", s, r.stderr)
	}
	if renewals < 1 || checkpoints < 1 {
		t.Errorf("lease renewals %d, checkpoints %d: want both counted\n%s", renewals, checkpoints, r.stdout)
	}
	if s.ClockMs <= s.ElapsedMs {
		t.Errorf("demo clock %d ms, wall clock %d ms: no fast-forward", s.ClockMs, s.ElapsedMs)
	}
	if !strings.Contains(r.stderr, "the demo clock runs ×5") {
		t.Errorf("fast-forward not told:\n%s", r.stderr)
	}
}

// TestDemoTenants: the demo's jobs belong to six tenants, one hot with
// about half of them; the hot tenant's email zone backs up and grows its
// lanes, and the summary says so.
func TestDemoTenants(t *testing.T) {
	h := newHarness(t)
	r := h.run("demo", "--jobs", "200", "--kill=false", "--duration", "120s", "-o", "json")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s", r.err, r.stderr)
	}
	var s demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if !s.Drained || len(s.Tenants) != len(demoTenants) || s.Tenants[0].ItemSpace != demoHotTenant || !s.Tenants[0].Hot || s.Tenants[0].Jobs < 70 {
		t.Errorf("tenants: %+v", s.Tenants)
	}
	grew := false
	for _, g := range s.ZonesGrown {
		grew = grew || (g.TaskType == demoHotType && g.ItemSpace == demoHotTenant && g.To > g.From)
	}
	if !grew || !strings.Contains(r.stderr, "zone email/acme grew from 1 to") {
		t.Errorf("the hot zone did not grow: %+v\n%s", s.ZonesGrown, r.stderr)
	}
}

// cancelOn cancels a context when a write contains a string.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	what   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(p, []byte(c.what)) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// TestDemoInterrupted: Ctrl-C (the context ending) is reported as an
// interruption, with exit status 130, not as the --duration bound with 0.
func TestDemoInterrupted(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, _, _ := h.deps("")
	out := &cancelOn{what: "enqueued", cancel: cancel}
	d.Stdout = out
	err := run(ctx, d, []string{"quick", "demo", "--jobs", "40", "--duration", "60s"})
	if !errors.Is(err, errInterrupted) || exitCode(err) != 130 {
		t.Fatalf("err %v (exit %d), want interrupted, exit 130", err, exitCode(err))
	}
	got := out.buf.String()
	if !strings.Contains(got, "summary: interrupted (Ctrl-C) after") || strings.Contains(got, "bound") {
		t.Errorf("summary:\n%s", got)
	}
}

// TestDemoTerminal: on a terminal every frame is drawn over the last one
// (no screen clear, which floods the scrollback) and fits 80×24.
func TestDemoTerminal(t *testing.T) {
	h := newHarness(t)
	d, out, errb := h.deps("")
	d.IsTerminal = func(io.Writer) bool { return true }
	r := runApp(d, out, errb, "demo", "--jobs", "60", "--duration", "60s", "--speed", "4")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s", r.err, r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b[2J") {
		t.Error("a frame clears the screen")
	}
	body, summary, ok := strings.Cut(r.stdout, "\x1b[J\nsummary: ")
	if !ok {
		t.Fatalf("no summary after the last frame:\n%q", r.stdout)
	}
	frames := strings.Split(body, "\x1b[H")[1:]
	if len(frames) < 2 {
		t.Fatalf("%d frames", len(frames))
	}
	for i, f := range frames {
		f = strings.ReplaceAll(strings.ReplaceAll(f, "\x1b[K", ""), "\x1b[J", "")
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) > 23 {
			t.Errorf("frame %d has %d lines, over 23:\n%s", i, len(lines), f)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("frame %d has a line of %d columns: %q", i, n, l)
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace("summary: "+summary), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("summary line of %d columns: %q", n, l)
		}
	}
	last := frames[len(frames)-1]
	if !strings.Contains(last, "60/60 done") || !strings.Contains(last, "took over") {
		t.Errorf("last frame:\n%s", last)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
