package workermain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

func TestParseSubspace(t *testing.T) {
	for _, c := range []struct {
		in   string
		want tuple.Tuple
	}{
		{"quick", tuple.Tuple{"quick"}},
		{"app,jobs", tuple.Tuple{"app", "jobs"}},
		{`("app", 7)`, tuple.Tuple{"app", int64(7)}},
		{` app , "a b" ,`, tuple.Tuple{"app", "a b"}},
	} {
		got, err := ParseSubspace(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if !bytes.Equal(got.Bytes(), tuple.FromTuple(c.want).Bytes()) {
			t.Fatalf("%q: got %v, want %v", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "()", "a,,b", `"unterminated`} {
		if _, err := ParseSubspace(bad); !errors.Is(err, ErrFlags) {
			t.Fatalf("%q: %v, want ErrFlags", bad, err)
		}
	}
}

// RunMain with -embedded runs a worker binary end to end: setup registers a
// handler and enqueues, the jobs run, and cancelling the context shuts it
// down cleanly.
func TestRunMainEmbedded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 5
	done := make(chan struct{}, n)
	var stderr bytes.Buffer
	err := RunMain(func(w *worker.Worker) error {
		if err := worker.RegisterRaw(w, "main", func(ctx context.Context, j *worker.RawJob) error {
			done <- struct{}{}
			if len(done) == n {
				cancel()
			}
			return nil
		}, worker.HandlerOptions{}); err != nil {
			return err
		}
		jobs := make([]quick.NewJob, n)
		for i := range jobs {
			jobs[i] = quick.NewJob{TaskType: "main"}
		}
		_, err := w.Queue().Enqueue(ctx, jobs...)
		return err
	}, MainOptions{
		AllowEmbedded: true,
		Args:          []string{"-embedded", "-subspace", "test,main", "-concurrency", "2", "-lanes", "4", "-id", "main-test"},
		Context:       ctx,
		Stderr:        &stderr,
	})
	if err != nil {
		t.Fatalf("RunMain: %v\n%s", err, stderr.String())
	}
	if len(done) != n {
		t.Fatalf("%d jobs ran, want %d", len(done), n)
	}
	if !strings.Contains(stderr.String(), "worker: stopped") {
		t.Fatalf("no clean stop in the log:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), "IN-MEMORY ENGINE") {
		t.Fatalf("no warning that the run is on the in-memory engine:\n%s", stderr.String())
	}
}

// Jobs of several tenants go to their zones, and the worker finds them
// through the pointer index.
func TestRunMainTenants(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 5
	done := make(chan struct{}, n)
	var stderr bytes.Buffer
	err := RunMain(func(w *worker.Worker) error {
		if err := worker.RegisterRaw(w, "main", func(ctx context.Context, j *worker.RawJob) error {
			done <- struct{}{}
			if len(done) == n {
				cancel()
			}
			return nil
		}, worker.HandlerOptions{}); err != nil {
			return err
		}
		jobs := make([]quick.NewJob, n)
		for i := range jobs {
			jobs[i] = quick.NewJob{TaskType: "main", ItemSpace: fmt.Sprintf("tenant-%d", i)}
		}
		_, err := w.Queue().Enqueue(ctx, jobs...)
		return err
	}, MainOptions{
		AllowEmbedded: true,
		Args:          []string{"-embedded", "-id", "tenants-test"},
		Context:       ctx,
		Stderr:        &stderr,
	})
	if err != nil {
		t.Fatalf("RunMain: %v\n%s", err, stderr.String())
	}
	if len(done) != n {
		t.Fatalf("%d jobs ran, want %d", len(done), n)
	}
}

// A program that does not allow the in-memory engine refuses -embedded
// before it opens anything or runs setup: a production worker cannot be
// started on a database that forgets everything by a flag.
func TestRunMainRefusesEmbedded(t *testing.T) {
	ran := false
	var stderr bytes.Buffer
	err := RunMain(func(*worker.Worker) error { ran = true; return nil }, MainOptions{Args: []string{"-embedded"}, Stderr: &stderr})
	if ran {
		t.Fatal("setup ran on the in-memory engine in a program that did not allow it")
	}
	if !errors.Is(err, ErrEmbeddedNotAllowed) || !errors.Is(err, ErrFlags) {
		t.Fatalf("RunMain -embedded without AllowEmbedded: %v, want ErrEmbeddedNotAllowed", err)
	}
	f := Flags{Embedded: true, Subspace: "quick"}
	if _, _, err := f.Open(); !errors.Is(err, ErrEmbeddedNotAllowed) {
		t.Fatalf("Flags.Open -embedded without AllowEmbedded: %v, want ErrEmbeddedNotAllowed", err)
	}
}

// Without the fdb build tag, -cluster-file fails with an error that says how
// to get FoundationDB support. With it, a cluster file that does not exist
// fails to open. Either way RunMain returns an error and never runs setup.
// (This used to skip on any unexpected outcome, so it could not fail.)
func TestRunMainWithoutFDBBuild(t *testing.T) {
	ran := false
	err := RunMain(func(*worker.Worker) error { ran = true; return nil }, MainOptions{Args: []string{"-cluster-file", "/nonexistent"}, Stderr: &bytes.Buffer{}})
	if ran {
		t.Fatal("setup ran without a database")
	}
	if err == nil {
		t.Fatal("RunMain with a missing cluster file returned nil")
	}
	if fdbkv.Built {
		if errors.Is(err, fdbkv.ErrNotBuilt) {
			t.Fatalf("built with -tags fdb, yet: %v", err)
		}
		return
	}
	if !errors.Is(err, fdbkv.ErrNotBuilt) || !strings.Contains(err.Error(), "-tags fdb") {
		t.Fatalf("error %q: want ErrNotBuilt and a hint to build with -tags fdb", err)
	}
}
