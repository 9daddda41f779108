package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// snapshotRun runs the CLI as a process without an injected database
// would: --snapshot loads the file.
func (h *harness) snapshotRun(args ...string) result {
	h.t.Helper()
	d, out, errb := h.deps("")
	d.DB = nil
	return runApp(d, out, errb, args...)
}

// TestSnapshotOpensTheQueue: a snapshot of a queue answers every command
// as the queue itself does (the stats golden file, read through the
// file); a change is saved back; a snapshot a demo still saves over
// refuses changes and says why, and is left as it was.
func TestSnapshotOpensTheQueue(t *testing.T) {
	h := newHarness(t)
	h.fill()
	path := filepath.Join(t.TempDir(), "q.snapshot")
	hdr := snapshotHeader{Writer: "quick demo", PID: 1, SaveEveryMs: 1000, SavedAt: h.clk.Now(), ClockAt: h.clk.Now(), Subspace: "quick"}
	if err := saveSnapshot(context.Background(), h.db, path, hdr); err != nil {
		t.Fatal(err)
	}
	r := h.snapshotRun("--snapshot", path, "stats")
	if r.err != nil {
		t.Fatalf("stats: %v\n%s", r.err, r.stderr)
	}
	golden(t, "stats", r.stdout)
	if r := h.snapshotRun("stats", "--snapshot", path, "--embedded"); r.err == nil || !strings.Contains(r.err.Error(), "choose one database") {
		t.Errorf("--snapshot with --embedded: %v", r.err)
	}

	// A change is saved back, as a snapshot nobody writes any more.
	r = h.snapshotRun("--snapshot", path, "enqueue", "--type", "report", "--payload", "x")
	if r.err != nil {
		t.Fatalf("enqueue: %v\n%s", r.err, r.stderr)
	}
	r = h.snapshotRun("--snapshot", path, "stats", "-o", "json")
	if r.err != nil || !strings.Contains(r.stdout, `"task_type": "report"`) || !strings.Contains(r.stdout, `"ready": 3`) {
		t.Fatalf("stats after enqueue: %v\n%s", r.err, r.stdout)
	}
	f, _ := os.Open(path)
	saved, _, err := decodeSnapshot(f)
	f.Close()
	if err != nil || saved.Live || saved.Writer != "quick demo" || saved.Subspace != "quick" {
		t.Errorf("saved back: %+v %v", saved, err)
	}

	// Live: its demo saved it a moment ago and will again.
	hdr.Live, hdr.SavedAt, hdr.ClockAt = true, h.clk.Now(), h.clk.Now().Add(20*time.Second)
	if err := saveSnapshot(context.Background(), h.db, path, hdr); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	r = h.snapshotRun("--snapshot", path, "enqueue", "--type", "report", "--payload", "y")
	if !errors.Is(r.err, errSnapshotLive) || !strings.Contains(r.err.Error(), "quick demo (pid 1) saves its queue over "+path) {
		t.Errorf("enqueue on a live snapshot: %v", r.err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a refused change rewrote the snapshot")
	}
	// Reads work, on the demo's clock: the fake clock plus the 20 s the
	// demo's clock was ahead of the wall clock at the save.
	r = h.snapshotRun("--snapshot", path, "stats")
	if r.err != nil || !strings.Contains(r.stdout, "1m51s") {
		t.Errorf("stats on a live snapshot: %v\n%s", r.err, r.stdout)
	}
	// A live header whose saves stopped (a demo killed hard) is writable.
	if !hdr.stillWritten(hdr.SavedAt.Add(4*time.Second)) || hdr.stillWritten(hdr.SavedAt.Add(6*time.Second)) {
		t.Error("stillWritten: want true within 3 periods + 2 s of the last save only")
	}

	// Files that are no snapshot.
	missing := filepath.Join(t.TempDir(), "none")
	if r := h.snapshotRun("--snapshot", missing, "stats"); r.err == nil || !strings.Contains(r.err.Error(), "run quick demo first") {
		t.Errorf("missing file: %v", r.err)
	}
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("hello"), 0o644)
	if r := h.snapshotRun("--snapshot", junk, "stats"); !errors.Is(r.err, errBadSnapshot) {
		t.Errorf("junk file: %v", r.err)
	}
}

// TestDemoSavesASnapshot: quick demo saves its queue where --snapshot
// finds it, and says how to look at it; the dead letters there are the
// summary's.
func TestDemoSavesASnapshot(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "demo.snapshot")
	r := h.run("demo", "--jobs", "30", "--kill=false", "--duration", "60s", "--speed", "5", "--save", path, "-o", "json")
	if r.err != nil {
		t.Fatalf("demo: %v\n%s", r.err, r.stderr)
	}
	var s demoSummary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Snapshot != path {
		t.Fatalf("summary: %v %s", err, r.stdout)
	}
	if !strings.Contains(r.stderr, "quick --snapshot "+path+" stats shows it") {
		t.Errorf("progress does not say where the queue is saved:\n%s", r.stderr)
	}
	r = h.snapshotRun("--snapshot", path, "stats", "-o", "json")
	if r.err != nil {
		t.Fatalf("stats: %v\n%s", r.err, r.stderr)
	}
	var st struct {
		Types []struct {
			Dead int64 `json:"dead"`
		} `json:"types"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	var dead int64
	for _, ty := range st.Types {
		dead += ty.Dead
	}
	if len(st.Types) < 5 || dead != s.DeadLetters {
		t.Errorf("snapshot stats: %d types, %d dead; the demo said %d:\n%s", len(st.Types), dead, s.DeadLetters, r.stdout)
	}
	// The table summary names the file and the commands to try.
	var buf bytes.Buffer
	writeDemoSummary(&buf, s, time.Minute)
	if !strings.Contains(buf.String(), "quick --snapshot "+path+" stats") {
		t.Errorf("summary:\n%s", buf.String())
	}
	// Tests' deps have no default path: a demo saves only when told where.
	if r := h.run("demo", "--jobs", "5", "--kill=false", "--duration", "30s", "--speed", "5", "-o", "json"); r.err != nil || strings.Contains(r.stdout, `"snapshot"`) {
		t.Errorf("demo without --save: %v %s", r.err, r.stdout)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/quick-demo-0.snapshot": "/tmp/quick-demo-0.snapshot",
		"/tmp/my dir/x":              "'/tmp/my dir/x'",
		"/tmp/it's":                  `'/tmp/it'\''s'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDecodeSnapshot: a damaged snapshot is an error, never a panic or an
// allocation of what its lengths claim; what decodes encodes back the same.
func FuzzDecodeSnapshot(f *testing.F) {
	var good bytes.Buffer
	encodeSnapshot(&good, snapshotHeader{Writer: "quick demo", Subspace: "demo", Keys: 2},
		[]kv.KeyValue{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: nil}})
	f.Add(good.Bytes())
	f.Add([]byte(snapshotMagic))
	f.Add([]byte(snapshotMagic + "\x02{}"))
	f.Add([]byte(snapshotMagic + "\x0b{\"keys\":1}\xff\xff\xff\xff\x0f"))
	f.Add(good.Bytes()[:len(good.Bytes())-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		h, kvs, err := decodeSnapshot(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, errBadSnapshot) {
				t.Fatalf("error %v does not wrap errBadSnapshot", err)
			}
			return
		}
		if len(kvs) != h.Keys {
			t.Fatalf("%d keys, header says %d", len(kvs), h.Keys)
		}
		var again bytes.Buffer
		if err := encodeSnapshot(&again, h, kvs); err != nil {
			t.Fatal(err)
		}
		h2, kvs2, err := decodeSnapshot(&again)
		if err != nil || h2.Keys != h.Keys || len(kvs2) != len(kvs) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestUIDemoSavesASnapshot: quick ui --demo's workload saves its queue
// while it runs (a live snapshot: reads work, changes are refused) and a
// last time when it stops (changes then work).
func TestUIDemoSavesASnapshot(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "ui.snapshot")
	d, err := startUIDemo(context.Background(), uiDemoConfig{Wave: time.Hour, Jobs: 20, Rate: 0, Workers: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Save: path, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()
	deadline := time.Now().Add(20 * time.Second) // a failure deadline, not a measure
	for {
		r := h.snapshotRunReal("--snapshot", path, "stats", "-o", "json")
		if r.err == nil && strings.Contains(r.stdout, `"task_type": "email"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot with the demo's jobs: %v %s", r.err, r.stdout)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the first save, not for time
	}
	if r := h.snapshotRunReal("--snapshot", path, "pause", "email"); !errors.Is(r.err, errSnapshotLive) ||
		!strings.Contains(r.err.Error(), "quick ui --demo (pid") {
		t.Errorf("pause on the running demo's snapshot: %v", r.err)
	}
	d.stop()
	stopped = true
	if r := h.snapshotRunReal("--snapshot", path, "pause", "email"); r.err != nil {
		t.Errorf("pause once the demo stopped: %v %s", r.err, r.stderr)
	}
}

// snapshotRunReal is snapshotRun on the real clock: the file's header was
// written on it.
func (h *harness) snapshotRunReal(args ...string) result {
	h.t.Helper()
	d, out, errb := h.deps("")
	d.DB, d.Clock = nil, nil
	return runApp(d, out, errb, args...)
}
