package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
	"github.com/quickfdb/quickfdb/worker"
)

func (a *app) uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "serve the web console (overview, lanes, jobs, dead letters, cron, workers) over HTTP",
		Description: "Serves package ui's console on --listen until interrupted. Actions (requeue, cancel, purge,\n" +
			"cron repair) ask for confirmation; --read-only turns them off. The console reads and writes\n" +
			"only through the library; docs/ui.md says what each page and action costs.\n" +
			"--demo runs the demo's workload (jobs in waves, three workers, a cron schedule) in this\n" +
			"process on the embedded engine, whatever the connection flags say, and shows it.",
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
		d, err := startUIDemo(ctx, uiDemoConfig{Wave: c.Duration("wave"), Jobs: c.Int("jobs"), Rate: c.Int("rate"), Workers: 3, Logger: logger})
		if err != nil {
			return err
		}
		defer d.stop()
		q, workers = d.q, d.workers
		what = fmt.Sprintf("the demo workload (%d jobs/s and %d more every %v, 3 workers, embedded engine)", c.Int("rate"), c.Int("jobs"), c.Duration("wave"))
		sample = 2 * time.Second
	} else {
		var err error
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
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.String("listen"), err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if c.Bool("read-only") {
		mode = " (read-only)"
	}
	fmt.Fprintf(a.d.Stdout, "quick ui: serving %s on http://%s/%s; Ctrl-C stops\n", what, ln.Addr(), mode)
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
