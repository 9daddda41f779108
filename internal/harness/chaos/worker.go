package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
	"github.com/quickfdb/quickfdb/workermain"
)

// WorkerArgs are a worker child's settings: what the run passes on its
// command line (Flags) and the child parses back (ParseWorkerArgs).
type WorkerArgs struct {
	ClusterFile string
	Subspace    string
	ID          string
	Concurrency int
	LogLevel    string
}

// Flags renders a as the command line ParseWorkerArgs reads.
func (a WorkerArgs) Flags() []string {
	return []string{"-cluster-file", a.ClusterFile, "-subspace", a.Subspace, "-id", a.ID,
		"-concurrency", strconv.Itoa(a.Concurrency), "-log-level", a.LogLevel}
}

// ParseWorkerArgs parses a worker child's command line.
func ParseWorkerArgs(args []string, stderr io.Writer) (WorkerArgs, error) {
	fs := flag.NewFlagSet("chaos-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var a WorkerArgs
	fs.StringVar(&a.ClusterFile, "cluster-file", "", "FoundationDB cluster file")
	fs.StringVar(&a.Subspace, "subspace", "", "the run's subspace (workermain -subspace syntax)")
	fs.StringVar(&a.ID, "id", "", "worker ID")
	fs.IntVar(&a.Concurrency, "concurrency", 8, "handler slots per task type")
	fs.StringVar(&a.LogLevel, "log-level", "warn", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return WorkerArgs{}, err
	}
	if fs.NArg() > 0 {
		return WorkerArgs{}, fmt.Errorf("chaos: unexpected arguments %q", fs.Args())
	}
	if a.ID == "" || a.Subspace == "" || a.Concurrency < 1 {
		return WorkerArgs{}, errors.New("chaos: a worker needs -id, -subspace and -concurrency >= 1")
	}
	return a, nil
}

// Logger is the child's logger at a.LogLevel.
func (a WorkerArgs) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.LogLevel)); err != nil {
		return nil, fmt.Errorf("chaos: -log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// errsEvery is how often a worker reports its error counts.
const errsEvery = 2 * time.Second

// RunWorker is the worker child: one worker.Worker running every task type
// of the run on db until ctx ends (its SIGTERM), then a graceful stop. It
// reports events (Event) on out: ready, each handler run's start and end,
// its error counts every errsEvery, and exit.
func RunWorker(ctx context.Context, a WorkerArgs, db kv.Database, out io.Writer, log *slog.Logger) error {
	return runWorker(ctx, a, db, out, log, clock.Real())
}

// runWorker is RunWorker on clk: the queue's, the worker's and the
// handlers' time (an in-process worker's freezeClock).
func runWorker(ctx context.Context, a WorkerArgs, db kv.Database, out io.Writer, log *slog.Logger, clk clock.Clock) error {
	root, err := workermain.ParseSubspace(a.Subspace)
	if err != nil {
		return err
	}
	qs, keys := Spaces(root)
	edb := CountErrors(db)
	opts := QueueOptions()
	opts.Logger = log
	opts.Clock = clk
	q, err := quick.Open(ctx, edb, qs, opts)
	if err != nil {
		return fmt.Errorf("chaos: open the queue: %w", err)
	}
	w, err := worker.New(worker.Config{Queue: q, ID: a.ID, Logger: log, DefaultConcurrency: a.Concurrency})
	if err != nil {
		return err
	}
	lw := &lineWriter{w: out}
	h := &handlers{id: a.ID, keys: keys, clock: clk, emit: lw.emit}
	if err := h.register(w); err != nil {
		return err
	}
	lw.emit(Event{Kind: EvReady, Worker: a.ID, At: time.Now().UnixNano()})
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	t := time.NewTicker(errsEvery)
	defer t.Stop()
	for {
		select {
		case err = <-runErr:
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				err = nil // the stop asked for
			}
			lw.emit(Event{Kind: EvExit, Worker: a.ID, At: time.Now().UnixNano(), Note: FormatCodes(edb.Codes())})
			log.Info("chaos worker: exiting", "stats", fmt.Sprintf("%+v", w.Stats()))
			return err
		case <-t.C:
			lw.emit(Event{Kind: EvErrs, Worker: a.ID, At: time.Now().UnixNano(), Note: FormatCodes(edb.Codes())})
		}
	}
}
