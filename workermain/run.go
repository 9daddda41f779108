package workermain

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

	qmetrics "github.com/quickfdb/quickfdb/metrics"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// MainOptions configure RunMain. The zero value is usable.
type MainOptions struct {
	// Args are the command-line arguments. Default os.Args[1:].
	Args []string
	// Name names the program in usage messages. Default os.Args[0].
	Name string
	// Queue are the queue's options; -lanes sets ZoneLanes.
	Queue quick.Options
	// AllowEmbedded lets -embedded run the worker on the in-memory engine,
	// which forgets every job when the process exits. Only demo and test
	// programs set it; without it -embedded fails with
	// ErrEmbeddedNotAllowed. A run on it logs a warning at start.
	AllowEmbedded bool
	// Config is the worker's base configuration; RunMain sets Queue and,
	// from the flags, ID, DefaultConcurrency and ShutdownTimeout.
	Config worker.Config
	// Context ends the worker like SIGINT does. Default background.
	Context context.Context
	// Stderr receives usage and logs. Default os.Stderr.
	Stderr io.Writer
}

// Main is RunMain with default options that exits the process: a worker
// binary per task type is then a few lines.
//
//	func main() {
//		workermain.Main(func(w *worker.Worker) error {
//			return worker.Register(w, sendEmail, worker.HandlerOptions{})
//		})
//	}
func Main(setup func(w *worker.Worker) error) {
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
func RunMain(setup func(w *worker.Worker) error, opts MainOptions) error {
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
	f := Flags{AllowEmbedded: opts.AllowEmbedded}
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
	if f.Clusters != "" {
		return runGroup(setup, opts, &f, logger)
	}
	db, space, err := f.Open()
	if err != nil {
		return err
	}
	if f.Embedded {
		logger.Warn("workermain: RUNNING ON THE IN-MEMORY ENGINE (-embedded): every job is lost when this process exits; for demos and tests only")
	}
	if c, ok := db.(io.Closer); ok {
		defer c.Close()
	}
	ctx, stop := signal.NotifyContext(opts.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	qopts := opts.Queue
	if f.Lanes > 0 {
		qopts.ZoneLanes = f.Lanes
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
	exp, err := f.applyConfig(&cfg)
	if err != nil {
		return err
	}
	w, err := worker.New(cfg)
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

// applyConfig applies the flags that shape a worker's Config (its ID,
// default concurrency, shutdown timeout) and, with -metrics-listen, the
// default Prometheus exporter as its meter provider; it returns the
// exporter (nil without the flag) for the caller to serve.
func (f *Flags) applyConfig(cfg *worker.Config) (*qmetrics.Exporter, error) {
	var exp *qmetrics.Exporter
	if f.MetricsListen != "" {
		var err error
		if exp, err = qmetrics.Default(); err != nil {
			return nil, err
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
	return exp, nil
}
