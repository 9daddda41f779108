package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/workermain"
)

// TestMain lets TestMainRegion run this package's main, and its setup on
// the in-memory engine, as child processes.
func TestMain(m *testing.M) {
	switch os.Getenv("QUICKFDB_README_MAIN") {
	case "main":
		os.Args = []string{"readme", "-embedded"}
		main()
		return
	case "demo":
		err := workermain.RunMain(setup, workermain.MainOptions{AllowEmbedded: true, Args: []string{"-embedded", "-log-level", "debug"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// regionFiles hold the README's regions: the program, and a user's test of
// it (usertest_test.go, the README's "Testing your own code").
var regionFiles = []string{"main.go", "usertest_test.go"}

// regions reads the "readme:begin NAME" ... "readme:end" regions of
// regionFiles, with the indentation of their first line removed.
func regions(t *testing.T) map[string]string {
	t.Helper()
	var src []byte
	for _, f := range regionFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(append(src, b...), '\n')
	}
	out := map[string]string{}
	var name string
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		trim := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trim, "// readme:begin "):
			name, lines = strings.TrimPrefix(trim, "// readme:begin "), nil
		case trim == "// readme:end":
			indent := ""
			if len(lines) > 0 {
				indent = lines[0][:len(lines[0])-len(strings.TrimLeft(lines[0], "\t"))]
			}
			for i := range lines {
				lines[i] = strings.TrimPrefix(lines[i], indent)
			}
			out[name] = strings.TrimRight(strings.Join(lines, "\n"), "\n")
			name = ""
		case name != "":
			lines = append(lines, l)
		}
	}
	return out
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)\n```")

// TestReadmeQuotesThisFile: every Go block of README.md is one of this
// package's regions, verbatim, and every region is quoted.
func TestReadmeQuotesThisFile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	regs := regions(t)
	if len(regs) < 4 {
		t.Fatalf("found %d regions in main.go", len(regs))
	}
	quoted := map[string]bool{}
	for _, m := range goBlock.FindAllStringSubmatch(string(readme), -1) {
		block := m[1]
		found := ""
		for name, r := range regs {
			if r == block {
				found = name
			}
		}
		if found == "" {
			t.Errorf("README.md has a Go block that is no region of examples/readme/main.go or usertest_test.go (copy the region instead):\n%s", block)
			continue
		}
		quoted[found] = true
	}
	for name := range regs {
		if !quoted[name] {
			t.Errorf("region %q of examples/readme is not quoted in README.md", name)
		}
	}
}

func TestOpenRegion(t *testing.T) {
	db, err := openFDB()
	if err != nil && !errors.Is(err, fdbkv.ErrNotBuilt) {
		t.Fatalf("fdbkv.Open: %v", err)
	}
	if err == nil && db == nil {
		t.Fatal("no database and no error")
	}
}

// TestFDBRegions: the FDB entry points compile without the fdb tag and
// then fail with an error that says to build with it; with the tag, a value
// that is not the binding's is refused.
func TestFDBRegions(t *testing.T) {
	ctx := context.Background()
	type notFDB struct{}
	_, err := openOnFDB(ctx, notFDB{})
	want := fdbkv.ErrNotBuilt
	if fdbkv.Built {
		want = fdbkv.ErrNotFDB
	}
	if !errors.Is(err, want) || (!fdbkv.Built && !strings.Contains(err.Error(), "-tags fdb")) {
		t.Fatalf("openOnFDB: %v, want %v", err, want)
	}
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enqueueInFDBTx(q, notFDB{}); !errors.Is(err, want) {
		t.Fatalf("enqueueInFDBTx: %v, want %v", err, want)
	}
}

// TestEnqueueAndWorkerRegions: the user's row and its job commit together,
// and the README's worker sends the email.
func TestEnqueueAndWorkerRegions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	if err := signUp(ctx, db, "acme", []byte("user/ada"), []byte("Ada")); err != nil {
		t.Fatal(err)
	}
	var row []byte
	if err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) (err error) {
		row, err = tr.Get([]byte("user/ada")).Get()
		return err
	}); err != nil || string(row) != "Ada" {
		t.Fatalf("user row: %q %v", row, err)
	}
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var sent []string
	runCtx, stop := context.WithCancel(ctx)
	orig := send
	send = func(_ context.Context, to, subject string) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, to+" "+subject)
		stop()
		return nil
	}
	defer func() { send = orig }()
	if err := runWorker(runCtx, q); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0] != "ada@example.com Welcome" {
		t.Errorf("sent %q", sent)
	}
}

// TestMainRegion runs main (workermain.Main) as a process: asked for the
// in-memory engine, it refuses and exits 1 without starting a worker.
// Then it runs main's setup the way a demo program may, on the in-memory
// engine, and stops it with SIGINT: it starts, registers send_email, and
// exits 0.
func TestMainRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	refused := exec.Command(exe, "-test.run", "^$")
	refused.Env = append(os.Environ(), "QUICKFDB_README_MAIN=main")
	out, err := refused.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "-embedded is not allowed") || strings.Contains(string(out), "worker: starting") {
		t.Fatalf("main -embedded: %v, want exit 1 with the refusal and no worker started:\n%s", err, out)
	}

	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), "QUICKFDB_README_MAIN=demo")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	started := false
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.Contains(sc.Text(), "worker: starting") && strings.Contains(sc.Text(), "send_email") {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("main did not start a send_email worker:\n%s", strings.Join(log, "\n"))
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("main after SIGINT: %v", err)
	}
}

// The zones region puts the tenant's job inside the tenant's own subspace.
func TestZonesRegion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	tenants := tuple.FromTuple(tuple.Tuple{"myapp", "tenants"})
	q, err := invoiceForTenant(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), tenants)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := q.ZoneJobs(ctx, quick.ZoneJobsOptions{TaskType: "invoice", ItemSpace: "acme"})
	if err != nil || len(jobs.Jobs) != 1 {
		t.Fatalf("acme's zone holds %+v, %v; want its one invoice", jobs, err)
	}
	b, e := tenants.Sub("acme").Range()
	var n int
	if err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{}).GetSliceWithError()
		n = len(kvs)
		return err
	}); err != nil || n == 0 {
		t.Fatalf("nothing under acme's own subspace (%d keys, %v)", n, err)
	}
}
