package procbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
	"github.com/quickfdb/quickfdb/workermain"
)

// WorkerArgs are a child's settings: what the parent passes on its command
// line (Flags) and the child parses back (ParseWorkerArgs).
type WorkerArgs struct {
	ClusterFile string
	Subspace    string
	ID          string
	Layout      string
	ZoneLanes   int
	Concurrency int
	NoOp        bool
	Complete    string
	ReportEvery time.Duration
	LogLevel    string
}

// workerArgs are the settings of child id of c.
func (c Config) workerArgs(id string) WorkerArgs {
	return WorkerArgs{
		ClusterFile: c.ClusterFile, Subspace: c.Subspace, ID: id, Layout: c.Layout,
		ZoneLanes: c.ZoneLanes, Concurrency: c.Concurrency, NoOp: c.NoOp,
		Complete: c.Complete, ReportEvery: c.ReportEvery, LogLevel: "warn",
	}
}

func (a *WorkerArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.ClusterFile, "cluster-file", "", "FoundationDB cluster file")
	fs.StringVar(&a.Subspace, "subspace", "", "the run's subspace (workermain -subspace syntax)")
	fs.StringVar(&a.ID, "id", "", "worker ID")
	fs.StringVar(&a.Layout, "layout", "zones", "zones (the one layout)")
	fs.IntVar(&a.ZoneLanes, "zone-lanes", 0, "lanes of a new zone (0: quick's default)")
	fs.IntVar(&a.Concurrency, "concurrency", 8, "handler slots")
	fs.BoolVar(&a.NoOp, "noop", false, "handlers return at once instead of sleeping the job's duration")
	fs.StringVar(&a.Complete, "complete", CompleteWith, "with (CompleteWith and the counter key) or ack (batched acks)")
	fs.DurationVar(&a.ReportEvery, "report-every", 10*time.Millisecond, "how often to print the completed count")
	fs.StringVar(&a.LogLevel, "log-level", "warn", "debug, info, warn or error")
}

// Flags renders a as the command line ParseWorkerArgs reads.
func (a WorkerArgs) Flags() []string {
	f := []string{
		"-cluster-file", a.ClusterFile, "-subspace", a.Subspace, "-id", a.ID, "-layout", a.Layout,
		"-zone-lanes", strconv.Itoa(a.ZoneLanes),
		"-concurrency", strconv.Itoa(a.Concurrency), "-complete", a.Complete,
		"-report-every", a.ReportEvery.String(), "-log-level", a.LogLevel,
	}
	if a.NoOp {
		f = append(f, "-noop")
	}
	return f
}

// ParseWorkerArgs parses a child's command line.
func ParseWorkerArgs(args []string, stderr io.Writer) (WorkerArgs, error) {
	fs := flag.NewFlagSet("procs-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a WorkerArgs
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		return WorkerArgs{}, err
	}
	if fs.NArg() > 0 {
		return WorkerArgs{}, fmt.Errorf("procbench: unexpected arguments %q", fs.Args())
	}
	if a.ID == "" || a.Concurrency < 1 || a.ReportEvery <= 0 {
		return WorkerArgs{}, errors.New("procbench: a worker needs -id, -concurrency >= 1 and -report-every > 0")
	}
	if a.Complete != CompleteWith && a.Complete != CompleteAck {
		return WorkerArgs{}, fmt.Errorf("procbench: -complete %q: want %s or %s", a.Complete, CompleteWith, CompleteAck)
	}
	return a, nil
}

// Logger is the child's logger at a.LogLevel.
func (a WorkerArgs) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.LogLevel)); err != nil {
		return nil, fmt.Errorf("procbench: -log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// RunWorker is the child role: one worker of a.Concurrency slots on db
// until ctx ends (the child's SIGTERM), then a graceful stop. It prints
// report lines (Line) to out: ready once its claim loop has been refused
// (the parent has paused the task type), its completed count every
// a.ReportEvery when it changed, and its final counts after the stop.
func RunWorker(ctx context.Context, a WorkerArgs, db kv.Database, out io.Writer, log *slog.Logger) error {
	root, err := workermain.ParseSubspace(a.Subspace)
	if err != nil {
		return err
	}
	qs, counter := spaces(root)
	opts, err := queueOptions(a.Layout, a.ZoneLanes)
	if err != nil {
		return err
	}
	opts.Logger = log
	cdb := kv.WithCounters(db)
	q, err := quick.Open(ctx, cdb, qs, opts)
	if err != nil {
		return fmt.Errorf("procbench: open the queue: %w", err)
	}
	// No built-in duties: their purges would add reads to some rows and
	// not others.
	w, err := worker.New(worker.Config{Queue: q, ID: a.ID, Logger: log, DefaultConcurrency: a.Concurrency, NoBuiltinDuties: true})
	if err != nil {
		return err
	}
	h := handler{noOp: a.NoOp}
	if a.Complete == CompleteWith {
		h.counter = counter
	}
	if err := worker.RegisterRaw(w, TaskType, h.run, worker.HandlerOptions{Concurrency: a.Concurrency}); err != nil {
		return err
	}
	lw := &lineWriter{w: out}
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	err = report(ctx, a, w, lw, runErr)
	stats, kvs := w.Stats(), cdb.Stats()
	if werr := lw.write(Line{Kind: lineExit, ID: a.ID, Completed: stats.Completed, Worker: &stats, KV: &kvs}); err == nil {
		err = werr
	}
	return err
}

// readyPoll is how often a starting child looks for its first refused
// claim round: its ready line should not wait a whole ReportEvery.
const readyPoll = 2 * time.Millisecond

// report prints ready and progress lines until Run returns, and returns
// its error.
func report(ctx context.Context, a WorkerArgs, w *worker.Worker, lw *lineWriter, runErr <-chan error) error {
	t := time.NewTicker(min(a.ReportEvery, readyPoll))
	defer t.Stop()
	ready, last := false, int64(-1)
	for {
		select {
		case err := <-runErr:
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				err = nil // the stop asked for
			}
			return err
		case <-t.C:
		}
		s := w.Stats()
		if !ready {
			// A refused claim round means the claim loop runs and waits
			// for the pause to lift.
			if s.Refused == 0 && s.Claimed == 0 {
				continue
			}
			ready = true
			t.Reset(a.ReportEvery)
			if err := lw.write(Line{Kind: lineReady, ID: a.ID}); err != nil {
				return err
			}
		}
		if s.Completed != last {
			last = s.Completed
			if err := lw.write(Line{Kind: lineProgress, ID: a.ID, Completed: last}); err != nil {
				return err
			}
		}
	}
}
