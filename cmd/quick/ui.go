package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/metrics"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

func (a *app) uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "serve the web console (overview, tenants and their zones' lanes, jobs, retries, dead letters, cron, workers) and /metrics over HTTP; see docs/ui.md",
		Description: "Serves package ui's console on --listen until interrupted. Actions (requeue, cancel, purge,\n" +
			"cron repair, pause and resume, run now, cancel and requeue by filter) ask for confirmation;\n" +
			"--read-only turns them off. The console reads and writes\n" +
			"only through the library; docs/ui.md says what each page and action costs.\n" +
			"--demo runs the demo's workload (jobs in waves, three workers, a cron schedule) in this\n" +
			"process on the embedded engine, whatever the connection flags say, and shows it.\n" +
			"/metrics serves Prometheus text (the OpenTelemetry Prometheus exporter): queue depth gauges\n" +
			"per task type, measured by one process of the fleet at a time (unless --read-only, the console\n" +
			"takes its turn), and with --demo the demo workers' counters.\n" +
			"On an address other than loopback it refuses to start without a credential: --user and\n" +
			"--password (HTTP basic auth), --token (a bearer token), or --behind-auth when a proxy of yours\n" +
			"authenticates every request. Credentials, when given, guard every path, /metrics included.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Aliases: []string{"l"}, Value: "127.0.0.1:8080", Usage: "address to serve on (host:port); an address other than loopback needs --user and --password, --token or --behind-auth"},
			&cli.StringFlag{Name: "user", EnvVars: []string{"QUICK_UI_USER"}, Usage: "HTTP basic auth: the user every request must present (with --password)"},
			&cli.StringFlag{Name: "password", EnvVars: []string{"QUICK_UI_PASSWORD"}, Usage: "HTTP basic auth: the password (prefer the environment variable: a flag shows in ps)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"QUICK_UI_TOKEN"}, Usage: "a bearer token every request may present instead (Authorization: Bearer …; at least 16 characters)"},
			&cli.BoolFlag{Name: "behind-auth", Usage: "serve a non-loopback address without credentials: your own proxy authenticates every request"},
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
	creds, err := uiCredentials(c)
	if err != nil {
		return err
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
		q      *quick.Queue
		what   string
		sample time.Duration // history period: the ui's default unless a demo
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
		q = d.q
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
	h, err := ui.New(ui.Config{Queue: q, ReadOnly: c.Bool("read-only"), Logger: logger, Refresh: c.Duration("refresh"), SampleEvery: sample})
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
	var handler http.Handler = mux
	if creds != nil {
		handler = ui.RequireAuth(mux, *creds)
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.String("listen"), err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if c.Bool("read-only") {
		mode = " (read-only)"
	}
	switch {
	case creds != nil && creds.Token != "" && creds.User != "":
		mode += " (basic auth or bearer token required)"
	case creds != nil && creds.Token != "":
		mode += " (bearer token required)"
	case creds != nil:
		mode += " (basic auth required)"
	case c.Bool("behind-auth"):
		mode += " (no credentials: --behind-auth)"
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

// minTokenLen is the shortest bearer token quick ui takes: a short one is
// guessed.
const minTokenLen = 16

// uiCredentials reads the credential flags and decides whether the console
// may serve --listen: a loopback address needs none, any other address
// needs a credential or --behind-auth. It returns nil when no credential
// is asked for.
func uiCredentials(c *cli.Context) (*ui.Credentials, error) {
	cr := ui.Credentials{User: c.String("user"), Password: c.String("password"), Token: c.String("token")}
	switch {
	case (cr.User == "") != (cr.Password == ""):
		return nil, errors.New("--user and --password go together: give both (or QUICK_UI_USER and QUICK_UI_PASSWORD)")
	case cr.User != "" && strings.Contains(cr.User, ":"):
		return nil, errors.New("invalid --user: HTTP basic auth allows no ':' in a user name")
	case cr.Token != "" && len(cr.Token) < minTokenLen:
		return nil, fmt.Errorf("invalid --token: %d characters, want at least %d", len(cr.Token), minTokenLen)
	}
	has := cr.User != "" || cr.Token != ""
	if has && c.Bool("behind-auth") {
		return nil, errors.New("--behind-auth says a proxy of yours authenticates: give it or credentials, not both")
	}
	if !has && !c.Bool("behind-auth") && !loopbackListen(c.String("listen")) {
		return nil, fmt.Errorf("refusing to serve the console on %s without a credential: anyone who reaches it could requeue, cancel and purge. "+
			"Give --user and --password (or QUICK_UI_USER and QUICK_UI_PASSWORD), or --token (QUICK_UI_TOKEN), "+
			"or --behind-auth if a proxy of yours authenticates every request; or listen on 127.0.0.1", c.String("listen"))
	}
	if !has {
		return nil, nil
	}
	return &cr, nil
}

// loopbackListen reports whether a --listen address can be reached only
// from this machine: "localhost" or a loopback IP. An empty host, an
// unspecified address (0.0.0.0, ::) or any other name is not: a name is
// not resolved here, so one that happens to resolve to loopback still asks
// for a credential (failing closed).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
