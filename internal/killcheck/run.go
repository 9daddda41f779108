package killcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/workermain"
)

// Config is a run of the scenarios.
type Config struct {
	// Self is the path of this binary: the workers and the producer are
	// child processes running it.
	Self string
	// ClusterFile names the server the worker-kill scenario runs against;
	// when empty it starts its own from FDBBin, as server-restart does.
	ClusterFile string
	// FDBBin holds fdbserver and fdbcli for the server-restart scenario,
	// which starts its own server on DataDir (a fresh temporary directory
	// when empty).
	FDBBin  string
	DataDir string
	// Scenarios to run: "worker-kill", "server-restart", "short-batch".
	Scenarios []string
	// Subspace is the prefix every run's data goes under, plus a random
	// run id.
	Subspace string
	Jobs     int
	Steps    int
	StepTime time.Duration
	// Downtime is how long the server stays dead in server-restart.
	Downtime time.Duration
	// Timeout bounds one scenario.
	Timeout time.Duration
	// Keep keeps the run's data (and the started server's directory).
	Keep bool
	// LogDir receives the children's logs (a temporary directory when
	// empty; kept).
	LogDir string
	// ShortBatch adds the short-batch scenario to Scenarios.
	ShortBatch bool
	Out        io.Writer
}

// RunMain is the run role: parse flags, run the scenarios, print the
// checks. It returns an error if any check failed.
func RunMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := Config{Out: stdout}
	var scen string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.ClusterFile, "cluster-file", os.Getenv("FDB_CLUSTER_FILE"), "cluster file of the server the worker-kill scenario runs against (default $FDB_CLUSTER_FILE; if empty too, it starts its own from -fdb-bin)")
	fs.StringVar(&c.FDBBin, "fdb-bin", os.Getenv("QUICKFDB_FDB_BIN"), "directory holding fdbserver and fdbcli, for the server-restart scenario (default $QUICKFDB_FDB_BIN)")
	fs.StringVar(&c.DataDir, "data-dir", "", "an empty or new directory for the server-restart scenario's server (default a temporary directory)")
	fs.StringVar(&scen, "scenario", "worker-kill,server-restart", "scenarios to run, comma-separated: worker-kill, server-restart, short-batch")
	fs.StringVar(&c.Subspace, "subspace", "killcheck", "tuple prefix of the runs' data (a random run id is added)")
	fs.IntVar(&c.Jobs, "jobs", 12, "jobs per scenario")
	fs.IntVar(&c.Steps, "steps", 8, "steps per job")
	fs.DurationVar(&c.StepTime, "step-time", 500*time.Millisecond, "duration of one step")
	fs.DurationVar(&c.Downtime, "downtime", 3*time.Second, "how long server-restart leaves the server dead (beyond the 10 s lease, the leases of the jobs mid-run lapse)")
	fs.DurationVar(&c.Timeout, "timeout", 5*time.Minute, "bound on one scenario")
	fs.BoolVar(&c.Keep, "keep", false, "keep the runs' data and the started server's directory")
	fs.StringVar(&c.LogDir, "log-dir", "", "directory for the child processes' logs (default a new temporary directory)")
	fs.BoolVar(&c.ShortBatch, "short-batch", false, "also run short-batch: kill a worker with SIGKILL mid-batch in short-job mode (same as adding short-batch to -scenario)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.Scenarios = strings.Split(scen, ",")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c.Self = self
	return Run(ctx, c)
}

// Run runs the configured scenarios and fails if any check failed.
func Run(ctx context.Context, c Config) error {
	if c.ShortBatch && !slices.Contains(c.Scenarios, "short-batch") {
		c.Scenarios = append(c.Scenarios, "short-batch")
	}
	for _, name := range c.Scenarios {
		if !slices.Contains(scenarioNames, name) {
			return fmt.Errorf("killcheck: unknown scenario %q (want one of %s)", name, strings.Join(scenarioNames, ", "))
		}
	}
	if !fdbkv.Built {
		return fmt.Errorf("killcheck: this binary has no FoundationDB support: build it with -tags fdb (scripts/fdb-kill-check does): %w", fdbkv.ErrNotBuilt)
	}
	if c.Jobs < 2 || c.Jobs > MaxJobs || c.Steps < 3 {
		return fmt.Errorf("killcheck: want 2 <= -jobs <= %d and -steps >= 3", MaxJobs)
	}
	if c.LogDir == "" {
		d, err := os.MkdirTemp("", "killcheck-logs-")
		if err != nil {
			return err
		}
		c.LogDir = d
	}
	s := &scenario{Config: c}
	s.printf("child processes' logs in %s", c.LogDir)
	failed := 0
	for _, name := range c.Scenarios {
		var err error
		sctx, cancel := context.WithTimeout(ctx, c.Timeout)
		switch name {
		case "worker-kill":
			err = s.workerKill(sctx)
		case "server-restart":
			err = s.serverRestart(sctx)
		case "short-batch":
			err = s.shortBatch(sctx)
		}
		cancel()
		if err != nil {
			failed++
			s.printf("FAIL %s: %v", name, err)
		} else {
			s.printf("PASS %s", name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("killcheck: %d of %d scenarios failed", failed, len(c.Scenarios))
	}
	return nil
}

// scenarioNames are the scenarios Run knows.
var scenarioNames = []string{"worker-kill", "server-restart", "short-batch"}

type scenario struct {
	Config
	start time.Time
	name  string
	procs []*proc
}

func (s *scenario) printf(format string, args ...any) {
	if s.start.IsZero() {
		s.start = time.Now()
	}
	name := s.name
	if name == "" {
		name = "killcheck"
	}
	fmt.Fprintf(s.Out, "[%6.1fs] %s: %s\n", time.Since(s.start).Seconds(), name, fmt.Sprintf(format, args...))
}

// env is one scenario's run: its subspace (flag is how its children's
// -subspace spells it), database and queue, in layout (QueueOptions).
type env struct {
	cluster string
	flag    string
	root    tuple.Subspace
	db      kv.Database
	q       *quick.Queue
	keys    Keys
	layout  Layout
}

// open opens a fresh run on the cluster: a random run id under the
// configured subspace.
func (s *scenario) open(ctx context.Context, cluster string, layout Layout) (*env, error) {
	if layout == "" {
		layout = LayoutZones
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &env{cluster: cluster, flag: s.Subspace + ",r" + hex.EncodeToString(b[:]), layout: layout}
	var err error
	if e.root, err = workermain.ParseSubspace(e.flag); err != nil {
		return nil, err
	}
	if e.db, err = fdbkv.Open(cluster); err != nil {
		return nil, err
	}
	qs, keys := Spaces(e.root)
	e.keys = keys
	if e.q, err = quick.Open(ctx, e.db, qs, QueueOptions(layout)); err != nil {
		return nil, fmt.Errorf("open the queue on %s: %w", cluster, err)
	}
	s.printf("run subspace (%s), queue under it at (queue), %s layout, cluster file %s", e.flag, layout, cluster)
	return e, nil
}

// close kills what is left of the children and clears the run's data
// unless Keep is set.
func (s *scenario) close(e *env) {
	for _, p := range s.procs {
		if p.alive() {
			p.kill()
		}
	}
	s.procs = nil
	if e == nil || e.db == nil {
		return
	}
	if !s.Keep && e.q != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := e.db.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(e.root.Bytes()))
			return nil
		})
		if err != nil {
			s.printf("could not clear the run's data: %v", err)
		}
	}
}

func (s *scenario) child(name string, args ...string) (*proc, error) {
	log := filepath.Join(s.LogDir, s.name+"-"+name+".log")
	p, err := startProc(name, log, s.Self, args...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// startWorker starts a worker process with 4 slots; extra flags follow.
func (s *scenario) startWorker(e *env, id string, extra ...string) (*proc, error) {
	args := []string{"worker", "-cluster-file", e.cluster, "-subspace", e.flag, "-id", id, "-concurrency", "4", "-log-level", "info"}
	args = append(args, "-queue-layout", string(e.layout))
	return s.child(id, append(args, extra...)...)
}

// produce runs the producer process and returns the IDs it reported.
func (s *scenario) produce(ctx context.Context, e *env, hangAt int) ([]quick.ID, error) {
	args := []string{"produce", "-cluster-file", e.cluster, "-subspace", e.flag, "-log-level", "warn",
		"-jobs", fmt.Sprint(s.Jobs), "-steps", fmt.Sprint(s.Steps), "-step-time", s.StepTime.String(), "-hang-at", fmt.Sprint(hangAt)}
	args = append(args, "-queue-layout", string(e.layout))
	p, err := s.child("producer", args...)
	if err != nil {
		return nil, err
	}
	if err := p.wait(2 * time.Minute); err != nil {
		return nil, fmt.Errorf("producer: %w (log %s)", err, s.logOf("producer"))
	}
	ids := p.Progress().Enqueued
	if len(ids) != s.Jobs {
		return nil, fmt.Errorf("producer reported %d jobs, want %d", len(ids), s.Jobs)
	}
	s.printf("producer (pid %d) inserted %d jobs of %d steps of %v and exited", p.pid(), len(ids), s.Steps, s.StepTime)
	return ids, nil
}

func (s *scenario) logOf(name string) string {
	return filepath.Join(s.LogDir, s.name+"-"+name+".log")
}

// waitFor polls cond until it holds, ctx ends or a child in watch exits.
func (s *scenario) waitFor(ctx context.Context, what string, cond func() (bool, error), watch ...*proc) error {
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		for _, p := range watch {
			if !p.alive() {
				return fmt.Errorf("waiting for %s: %s exited: %v (log %s)", what, p.name, p.err, s.logOf(p.name))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// completed returns how many jobs have a completion count.
func (s *scenario) completed(ctx context.Context, e *env) (*Records, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return ReadRecords(rctx, e.db, e.keys)
}

// stopWorkers stops the workers gracefully (SIGTERM) and fails if one
// does not exit cleanly.
func (s *scenario) stopWorkers(ws ...*proc) error {
	var errs []error
	for _, w := range ws {
		if err := w.signal(syscall.SIGTERM); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range ws {
		if err := w.wait(time.Minute); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (log %s)", w.name, err, s.logOf(w.name)))
		}
	}
	if len(errs) == 0 {
		s.printf("stopped %d workers with SIGTERM: each exited 0", len(ws))
	}
	return errors.Join(errs...)
}

// report prints the checks and returns an error if any failed.
func (s *scenario) report(r *Report) error {
	for _, l := range r.Checked {
		s.printf("  checked: %s", l)
	}
	for _, l := range r.Problems {
		s.printf("  PROBLEM: %s", l)
	}
	if !r.OK() {
		return fmt.Errorf("%d problems", len(r.Problems))
	}
	return nil
}
