package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/metrics"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
	"github.com/quickfdb/quickfdb/worker"
)

func (a *app) uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "serve the web console (overview, tenants and their zones' lanes, jobs, dead letters, cron, workers) and /metrics over HTTP; see docs/ui.md",
		Description: "Serves package ui's console on --listen until interrupted. Actions (requeue, cancel, purge,\n" +
			"cron repair, pause and resume, run now, cancel and requeue by filter) ask for confirmation;\n" +
			"--read-only turns them off. The console reads and writes\n" +
			"only through the library; docs/ui.md says what each page and action costs.\n" +
			"--demo runs the demo's workload (jobs in waves, three workers, a cron schedule) in this\n" +
			"process on the embedded engine, whatever the connection flags say, and shows it.\n" +
			"/metrics serves Prometheus text (the OpenTelemetry Prometheus exporter): queue depth gauges\n" +
			"per task type, measured by one process of the fleet at a time (unless --read-only, the console\n" +
			"takes its turn), and with --demo the demo workers' counters.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Aliases: []string{"l"}, Value: "127.0.0.1:8080", Usage: "address to serve on (host:port; keep it on localhost or behind your own auth)"},
			&cli.BoolFlag{Name: "read-only", Usage: "show the queue but refuse every action"},
			&cli.BoolFlag{Name: "demo", Usage: "run the demo's workload in this process on the embedded engine and show it"},
			&cli.IntFlag{Name: "rate", Value: 20, Usage: "with --demo: jobs enqueued per second"},
			&cli.DurationFlag{Name: "wave", Value: 30 * time.Second, Usage: "with --demo: enqueue a burst of --jobs this often"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"n"}, Value: 400, Usage: "with --demo: jobs per burst"},
			&cli.DurationFlag{Name: "refresh", Value: 2 * time.Second, Usage: "how often pages refresh their live parts"},
		},
		Action: a.ui,
	}
}

func (a *app) ui(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("quick ui takes no arguments (got %q)", c.Args().First())
	}
	if c.Duration("refresh") <= 0 {
		return fmt.Errorf("invalid --refresh %v: want a positive duration", c.Duration("refresh"))
	}
	logger := slog.New(slog.NewTextHandler(a.d.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := c.Context
	// One exporter per command run (not metrics.Default): its registry holds
	// this console's gauges and, with --demo, its workers' counters.
	exp, err := metrics.New()
	if err != nil {
		return err
	}
	var (
		q       *quick.Queue
		workers func() []*worker.Worker
		what    string
		sample  time.Duration // history period: the ui's default unless a demo
	)
	if c.Bool("demo") {
		switch {
		case c.Duration("wave") <= 0:
			return fmt.Errorf("invalid --wave %v: want a positive duration", c.Duration("wave"))
		case c.Int("jobs") < 0 || c.Int("jobs") > 100_000:
			return fmt.Errorf("invalid --jobs %d: want 0 to 100,000", c.Int("jobs"))
		case c.Int("rate") < 0 || c.Int("rate") > 10_000:
			return fmt.Errorf("invalid --rate %d: want 0 to 10,000 jobs per second", c.Int("rate"))
		}
		d, err := startUIDemo(ctx, uiDemoConfig{Wave: c.Duration("wave"), Jobs: c.Int("jobs"), Rate: c.Int("rate"), Workers: 3, Logger: logger,
			MeterProvider: exp.MeterProvider(), Save: a.d.DemoSnapshot, Stderr: a.d.Stderr})
		if err != nil {
			return err
		}
		defer d.stop()
		q, workers = d.q, d.workers
		what = fmt.Sprintf("the demo workload (%d jobs/s and %d more every %v, 3 workers, embedded engine)", c.Int("rate"), c.Int("jobs"), c.Duration("wave"))
		if a.d.DemoSnapshot != "" {
			what += fmt.Sprintf("; its queue saved every second for quick --snapshot %s", shellQuote(a.d.DemoSnapshot))
		}
		sample = 2 * time.Second
	} else {
		if q, err = a.queue(c); err != nil {
			return err
		}
		what = "the queue under " + describeSpace(c)
	}
	h, err := ui.New(ui.Config{Queue: q, ReadOnly: c.Bool("read-only"), Logger: logger, Workers: workers, Refresh: c.Duration("refresh"), SampleEvery: sample})
	if err != nil {
		return err
	}
	defer h.Close()
	if !c.Bool("read-only") {
		stopDepth, err := runDepthReporter(ctx, exp, q, sample, logger)
		if err != nil {
			return err
		}
		defer stopDepth()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", exp.Handler())
	mux.Handle("/", h)
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.String("listen"), err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if c.Bool("read-only") {
		mode = " (read-only)"
	}
	fmt.Fprintf(a.d.Stdout, "quick ui: serving %s on http://%s/%s (Prometheus metrics at /metrics); Ctrl-C stops\n", what, ln.Addr(), mode)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut the server down: %w", err)
	}
	return nil
}

// runDepthReporter makes this console one of the fleet's queue depth
// reporters (metrics.DepthReporter): only the holder of the depth lease
// scans the queue, so a console beside workers that serve -metrics-listen
// adds no scans, and a console alone still reports depth. every is the
// reporter's interval (0: its default, 15 s). The returned func stops it.
func runDepthReporter(ctx context.Context, exp *metrics.Exporter, q *quick.Queue, every time.Duration, logger *slog.Logger) (func(), error) {
	host, _ := os.Hostname()
	rep, err := metrics.NewDepthReporter(exp.MeterProvider(), metrics.DepthOptions{Queue: q, Interval: every, Logger: logger,
		Holder: fmt.Sprintf("quick-ui@%s/%d", host, os.Getpid())})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep.Run(rctx)
	}()
	return func() { cancel(); <-done }, nil
}
