package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestMain(m *testing.M) {
	// The CLI reads these through its flags; a developer's shell must not
	// change what the tests see.
	for _, v := range []string{"FDB_CLUSTER_FILE", "QUICK_SUBSPACE", "QUICK_DIRECTORY", "QUICK_OUTPUT"} {
		os.Unsetenv(v)
	}
	os.Exit(m.Run())
}

// t0 is the fake clock's start: every time in a golden file derives from it.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// harness runs CLI commands in process against one memkv database and a
// fake clock.
type harness struct {
	t   testing.TB
	db  kv.Database
	clk *clock.Fake
}

func newHarness(t testing.TB) *harness {
	m := memkv.Open(memkv.Options{})
	t.Cleanup(func() { m.Close() })
	return &harness{t: t, db: m, clk: clock.NewFake(t0)}
}

type result struct {
	stdout, stderr string
	err            error
}

func (h *harness) deps(stdin string) (deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return deps{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Clock: h.clk, DB: h.db,
		OpenFDB:       func(string) (kv.Database, error) { return nil, errors.New("no FoundationDB in tests") },
		OpenDirectory: func(kv.Database, []string) ([]byte, error) { return nil, errors.New("no directory layer in tests") },
	}, &out, &errb
}

// run runs one command line with stdin.
func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	d, out, errb := h.deps(stdin)
	return runApp(d, out, errb, args...)
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runIn("", args...)
}

func runApp(d deps, out, errb *bytes.Buffer, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, d, append([]string{"quick"}, args...))
	return result{stdout: out.String(), stderr: errb.String(), err: err}
}

// ok runs a command that must succeed and returns its stdout.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.run(args...)
	if r.err != nil {
		h.t.Fatalf("quick %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r.stdout
}

// fails runs a command that must fail with an error containing want.
func (h *harness) fails(want string, args ...string) result {
	h.t.Helper()
	return h.failsIn("", want, args...)
}

func (h *harness) failsIn(stdin, want string, args ...string) result {
	h.t.Helper()
	r := h.runIn(stdin, args...)
	if r.err == nil {
		h.t.Fatalf("quick %s: succeeded, want an error containing %q\nstdout: %s", strings.Join(args, " "), want, r.stdout)
	}
	if !strings.Contains(r.err.Error(), want) {
		h.t.Fatalf("quick %s: error %q, want it to contain %q", strings.Join(args, " "), r.err, want)
	}
	return r
}

// queue opens the same queue the CLI opens by default.
func (h *harness) queue() *quick.Queue {
	h.t.Helper()
	q, err := quick.Open(context.Background(), h.db, tuple.FromTuple(tuple.Tuple{"quick"}), quick.Options{
		Clock:   h.clk,
		Backoff: func(int) time.Duration { return 5 * time.Second },
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return q
}

// claim takes o.Max jobs, claim after claim (each takes from one lane),
// and fails the test if fewer are there.
func (h *harness) claim(q *quick.Queue, o quick.ClaimOptions) []quick.Lease {
	h.t.Helper()
	var got []quick.Lease
	for range o.Max {
		want := o
		want.Max = o.Max - len(got)
		c, err := q.Consumer().Claim(context.Background(), want)
		if err != nil {
			h.t.Fatalf("claim %s: %v", o.TaskType, err)
		}
		got = append(got, c.Jobs...)
		if len(got) >= o.Max || len(c.Jobs) == 0 {
			break
		}
	}
	if len(got) != o.Max {
		h.t.Fatalf("claim %s: %d jobs, want %d", o.TaskType, len(got), o.Max)
	}
	return got
}

// id is a fixed job ID made at the clock's time: golden output depends on
// IDs, since they choose lanes.
func (h *harness) id(n int) quick.ID {
	var seed [10]byte
	copy(seed[:], fmt.Sprintf("job%07d", n))
	return quick.DeterministicID(h.clk.Now(), seed)
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// maskIDs replaces each distinct UUID by <id1>, <id2>... in order of
// appearance, for output holding IDs the CLI generated at random.
func maskIDs(s string) string {
	seen := map[string]string{}
	return uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if m, ok := seen[u]; ok {
			return m
		}
		seen[u] = fmt.Sprintf("<id%d>", len(seen)+1)
		return seen[u]
	})
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/quick -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./cmd/quick -update rewrites it):\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}
