package procbench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/bench"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// goChild is a child run as a goroutine of the test, on the test's memkv:
// the same RunWorker and report lines as a process, without the exec.
type goChild struct {
	out    *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (c *goChild) Output() io.Reader               { return c.out }
func (c *goChild) Stop() error                     { c.cancel(); return nil }
func (c *goChild) Kill()                           { c.cancel() }
func (c *goChild) CPUSoFar() (time.Duration, bool) { return 0, false }
func (c *goChild) Wait() (time.Duration, error) {
	<-c.done
	return 0, c.err
}

// inProcess spawns children as goroutines on db. They parse the command
// line the parent built, so the flags' round trip is exercised too.
func inProcess(t *testing.T, db kv.Database) Spawner {
	return func(_ context.Context, name string, args []string) (Child, error) {
		a, err := ParseWorkerArgs(args, io.Discard)
		if err != nil {
			return nil, err
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		c := &goChild{out: pr, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(c.done)
			c.err = RunWorker(ctx, a, db, pw, log)
			pw.Close()
		}()
		return c, nil
	}
}

func testConfig(layout, complete string) Config {
	c := Defaults()
	c.Subspace = "procbench,test," + layout + "," + complete
	c.Procs = []int{1, 2}
	c.Jobs = 200
	c.Layout = layout
	c.Complete = complete
	c.Duration = bench.Dist{Kind: "exponential", Mean: time.Millisecond}
	c.FillBatch = 50
	c.Settle = 50 * time.Millisecond
	c.Poll = 5 * time.Millisecond
	c.ReportEvery = 5 * time.Millisecond
	c.Timeout = time.Minute
	return c
}

// TestDrainInProcess runs the whole orchestration (pause, fill, children
// up, resume, drain, stop, checks) with goroutine children on memkv, for
// both layouts and both ways of counting completions: every row must
// count exactly the backlog and leave the queue empty.
func TestDrainInProcess(t *testing.T) {
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	for _, layout := range []string{"zones"} {
		for _, complete := range []string{CompleteWith, CompleteAck} {
			t.Run(layout+"/"+complete, func(t *testing.T) {
				cfg := testConfig(layout, complete)
				var out bytes.Buffer
				rows, err := Run(context.Background(), db, cfg, inProcess(t, db), &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
				t.Log("\n" + out.String())
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != 2 {
					t.Fatalf("%d rows", len(rows))
				}
				for i, r := range rows {
					if r.Procs != cfg.Procs[i] || r.Completed != int64(cfg.Jobs) || r.JobsPerSec <= 0 || r.PerJob.Commits <= 0 {
						t.Errorf("row %d: %+v", i, r)
					}
					if complete == CompleteWith && r.PerJob.Commits < 1 {
						t.Errorf("row %d: %.2f commits per job with CompleteWith, want at least 1", i, r.PerJob.Commits)
					}
				}
				if n := strings.Count(out.String(), "\n"); n != 3 {
					t.Errorf("%d lines of output, want a header and 2 rows", n)
				}
				// The run clears its subspace at the end.
				left := 0
				_ = db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
					kvs, err := tr.GetRange(kv.PrefixRange([]byte(nil)), kv.RangeOptions{}).GetSliceWithError()
					left = len(kvs)
					return err
				})
				if left != 0 {
					t.Errorf("%d keys left in the database", left)
				}
			})
		}
	}
}

func TestWorkerArgsRoundTrip(t *testing.T) {
	c := testConfig("zones", CompleteAck)
	c.NoOp, c.ZoneLanes, c.ClusterFile = true, 4, "/etc/fdb.cluster"
	want := c.workerArgs("p03")
	got, err := ParseWorkerArgs(want.Flags(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: got %+v, want %+v", got, want)
	}
	for _, bad := range [][]string{{"-id", "x", "-complete", "maybe"}, {"-concurrency", "2"}, {"-id", "x", "extra"}} {
		if _, err := ParseWorkerArgs(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, f := range map[string]func(*Config){
		"no procs":   func(c *Config) { c.Procs = nil },
		"zero procs": func(c *Config) { c.Procs = []int{0} },
		"layout":     func(c *Config) { c.Layout = "heap" },
		"complete":   func(c *Config) { c.Complete = "never" },
		"jobs":       func(c *Config) { c.Jobs = 0 },
		"payload":    func(c *Config) { c.Payload = 4 },
		"subspace":   func(c *Config) { c.Subspace = `"unterminated` },
	} {
		c := Defaults()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestPayloadsSeeded: every process count drains the same durations.
func TestPayloadsSeeded(t *testing.T) {
	d := bench.Dist{Kind: "exponential", Mean: 20 * time.Millisecond}
	a, b := payloads(1000, 100, d, 7), payloads(1000, 100, d, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different payloads")
	}
	var sum time.Duration
	for _, p := range a {
		if len(p) != 100 {
			t.Fatalf("payload of %d bytes", len(p))
		}
		sum += payloadDuration(p)
	}
	if mean := sum / 1000; mean < 15*time.Millisecond || mean > 25*time.Millisecond {
		t.Errorf("mean duration %v, want about 20ms", mean)
	}
}

func TestRowFormat(t *testing.T) {
	r := Row{Procs: 4, Jobs: 20000, Layout: "zones", Complete: "with", WallS: 5.25, JobsPerSec: 3809.5, CPUPer1k: 1.234,
		RunCPUPer1k: 1.1, KV: kv.Stats{Commits: 30000}}
	r.PerJob = r.KV.Per(int64(r.Jobs))
	unknown := r
	unknown.RunCPUPer1k = -1
	var b bytes.Buffer
	WriteHeader(&b)
	r.Write(&b)
	unknown.Write(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%q", b.String())
	}
	for i, want := range []string{
		"    4   20000 zones  with         5.25     3810     1.234     1.100    0.00    0.00    0.00    0.00    1.50   0.000",
		"    4   20000 zones  with         5.25     3810     1.234         -    0.00    0.00    0.00    0.00    1.50   0.000",
	} {
		if lines[i+1] != want {
			t.Errorf("row %d\n got %q\nwant %q", i, lines[i+1], want)
		}
		if len(lines[0]) != len(lines[i+1]) {
			t.Errorf("header and row differ in width:\n%s\n%s", lines[0], lines[i+1])
		}
	}
}

func TestParseLine(t *testing.T) {
	l, err := ParseLine([]byte(`{"kind":"progress","id":"p00","completed":12}`))
	if err != nil || l.Completed != 12 || l.ID != "p00" {
		t.Fatalf("%+v, %v", l, err)
	}
	for _, bad := range []string{`{"kind":"hello"}`, `not json`} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
