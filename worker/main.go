package worker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	qmetrics "github.com/quickfdb/quickfdb/metrics"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Flags are the command-line flags of a worker binary. Register adds them
// to a FlagSet; RunMain does both for you.
type Flags struct {
	ClusterFile     string
	Embedded        bool
	Subspace        string
	Concurrency     int
	Lanes           int
	ID              string
	ShutdownTimeout time.Duration
	StatsInterval   time.Duration
	LogLevel        string
	MetricsListen   string
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.ClusterFile, "cluster-file", "", "FoundationDB cluster file (\"\" for the default one; needs a build with -tags fdb)")
	fs.BoolVar(&f.Embedded, "embedded", false, "use an in-process embedded database instead of FoundationDB (for demos and tests; nothing is persisted)")
	fs.StringVar(&f.Subspace, "subspace", "quick", "tuple prefix the queue lives under: comma-separated strings and integers, e.g. app,jobs or (\"app\", 7)")
	fs.IntVar(&f.Concurrency, "concurrency", 0, "jobs run at once per task type, for handlers that set none (default 10)")
	fs.IntVar(&f.Lanes, "lanes", 0, "lanes per task type when the queue is created (default 16; an existing queue keeps its own)")
	fs.StringVar(&f.ID, "id", "", "worker ID (default host-pid-random)")
	fs.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long running jobs get to finish on SIGINT/SIGTERM before they are released")
	fs.DurationVar(&f.StatsInterval, "stats-interval", 0, "log the worker's counts this often (0: only at exit)")
	fs.StringVar(&f.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. :9464), with queue depth gauges measured by one worker of the fleet at a time")
}

// ErrFlags wraps the errors of bad command-line flags.
var ErrFlags = errors.New("worker: bad flags")

// Open opens the database and subspace the flags name.
func (f *Flags) Open() (kv.Database, tuple.Subspace, error) {
	space, err := ParseSubspace(f.Subspace)
	if err != nil {
		return nil, tuple.Subspace{}, err
	}
	if f.Embedded {
		if f.ClusterFile != "" {
			return nil, tuple.Subspace{}, fmt.Errorf("%w: -embedded and -cluster-file exclude each other", ErrFlags)
		}
		return memkv.Open(memkv.Options{}), space, nil
	}
	db, err := fdbkv.Open(f.ClusterFile)
	if err != nil {
		if errors.Is(err, fdbkv.ErrNotBuilt) {
			return nil, tuple.Subspace{}, fmt.Errorf("this binary has no FoundationDB support: build it with -tags fdb to use -cluster-file, or pass -embedded: %w", err)
		}
		return nil, tuple.Subspace{}, fmt.Errorf("open FoundationDB: %w", err)
	}
	return db, space, nil
}

// ParseSubspace reads the -subspace syntax: comma-separated elements,
// optionally in parentheses; an element that parses as an integer is an
// int64, a double-quoted one is a Go string literal, anything else a string.
// "app,jobs" is ("app", "jobs").
func ParseSubspace(s string) (tuple.Subspace, error) {
	t, err := tuple.ParsePrefix(s)
	if err != nil {
		return tuple.Subspace{}, fmt.Errorf("%w: %w", ErrFlags, err)
	}
	return tuple.FromTuple(t), nil
}

// MainOptions configure RunMain. The zero value is usable.
type MainOptions struct {
	// Args are the command-line arguments. Default os.Args[1:].
	Args []string
	// Name names the program in usage messages. Default os.Args[0].
	Name string
	// Queue are the queue's options; -lanes sets Lanes.
	Queue quick.Options
	// Config is the worker's base configuration; RunMain sets Queue and,
	// from the flags, ID, DefaultConcurrency and ShutdownTimeout.
	Config Config
	// Context ends the worker like SIGINT does. Default background.
	Context context.Context
	// Stderr receives usage and logs. Default os.Stderr.
	Stderr io.Writer
}

// Main is RunMain with default options that exits the process: a worker
// binary per task type is then a few lines.
//
//	func main() {
//		worker.Main(func(w *worker.Worker) error {
//			return worker.Register(w, sendEmail, worker.HandlerOptions{})
//		})
//	}
func Main(setup func(w *Worker) error) {
	if err := RunMain(setup, MainOptions{}); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}

// RunMain parses the flags, opens the database and the queue, builds a
// worker, lets setup register its handlers (and enqueue, for a demo), and
// runs it until SIGINT or SIGTERM, which shut it down gracefully. A second
// signal kills the process at once.
func RunMain(setup func(w *Worker) error, opts MainOptions) error {
	if opts.Args == nil {
		opts.Args = os.Args[1:]
	}
	if opts.Name == "" {
		opts.Name = os.Args[0]
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	fs := flag.NewFlagSet(opts.Name, flag.ContinueOnError)
	fs.SetOutput(opts.Stderr)
	var f Flags
	f.Register(fs)
	if err := fs.Parse(opts.Args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrFlags, fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return fmt.Errorf("%w: -log-level: %w", ErrFlags, err)
	}
	logger := opts.Config.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(opts.Stderr, &slog.HandlerOptions{Level: level}))
	}
	db, space, err := f.Open()
	if err != nil {
		return err
	}
	if c, ok := db.(io.Closer); ok {
		defer c.Close()
	}
	ctx, stop := signal.NotifyContext(opts.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	qopts := opts.Queue
	if f.Lanes > 0 {
		qopts.Lanes = f.Lanes
	}
	if qopts.Logger == nil {
		qopts.Logger = logger
	}
	q, err := quick.Open(ctx, db, space, qopts)
	if err != nil {
		return err
	}
	cfg := opts.Config
	cfg.Queue, cfg.Logger = q, logger
	var exp *qmetrics.Exporter
	if f.MetricsListen != "" {
		if exp, err = qmetrics.Default(); err != nil {
			return err
		}
		if cfg.MeterProvider == nil {
			cfg.MeterProvider = exp.MeterProvider()
		}
	}
	if f.ID != "" {
		cfg.ID = f.ID
	}
	if f.Concurrency > 0 {
		cfg.DefaultConcurrency = f.Concurrency
	}
	if f.ShutdownTimeout > 0 {
		cfg.ShutdownTimeout = f.ShutdownTimeout
	}
	w, err := New(cfg)
	if err != nil {
		return err
	}
	if err := setup(w); err != nil {
		return fmt.Errorf("worker setup: %w", err)
	}
	if exp != nil {
		stopMetrics, err := serveMetrics(ctx, f.MetricsListen, exp, cfg.MeterProvider, w, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if f.StatsInterval > 0 {
		go func() {
			t := time.NewTicker(f.StatsInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					logger.Info("worker: stats", "stats", fmt.Sprintf("%+v", w.Stats()))
				case <-w.Done():
					return
				}
			}
		}()
	}
	go func() {
		// Once the first signal has started the graceful stop, restore the
		// default handling so a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	err = w.Run(ctx)
	logger.Info("worker: exiting", "stats", fmt.Sprintf("%+v", w.Stats()))
	return err
}
