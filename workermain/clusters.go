package workermain

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// runGroup is RunMain with -clusters: one worker.Group serving every
// cluster named, setup called on each member worker (so each registers the
// same handlers; a task type's Concurrency is then shared by the clusters).
// Metrics carry a "cluster" attribute; /readyz is ready when every member
// claims and every cluster answers; stats are logged per cluster.
func runGroup(setup func(w *worker.Worker) error, opts MainOptions, f *Flags, logger *slog.Logger) error {
	dbs, space, err := f.OpenClusters()
	if err != nil {
		return err
	}
	if f.Embedded {
		logger.Warn("workermain: RUNNING ON THE IN-MEMORY ENGINE (-embedded): every job is lost when this process exits; for demos and tests only")
	}
	defer func() {
		for _, n := range dbs {
			if c, ok := n.DB.(io.Closer); ok {
				c.Close()
			}
		}
	}()
	ctx, stop := signal.NotifyContext(opts.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	qopts := opts.Queue
	if f.Lanes > 0 {
		qopts.ZoneLanes = f.Lanes
	}
	if qopts.Logger == nil {
		qopts.Logger = logger
	}
	var clusters []worker.Cluster
	for _, n := range dbs {
		o := qopts
		o.Logger = qopts.Logger.With("cluster", n.Name)
		q, err := quick.Open(ctx, n.DB, space, o)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", n.Name, err)
		}
		clusters = append(clusters, worker.Cluster{Name: n.Name, Queue: q})
	}
	cfg := opts.Config
	cfg.Logger = logger
	exp, err := f.applyConfig(&cfg)
	if err != nil {
		return err
	}
	g, err := worker.NewGroup(worker.GroupConfig{Clusters: clusters, Config: cfg})
	if err != nil {
		return err
	}
	if err := g.Each(setup); err != nil {
		return fmt.Errorf("worker setup: %w", err)
	}
	if exp != nil {
		ready := http.NewServeMux()
		members := g.Workers()
		ready.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			// Every member's readiness and database, in turn: the first
			// that is not ready answers, naming its cluster.
			for _, m := range members {
				rec := &statusRecorder{ResponseWriter: w, prefix: "cluster " + m.Cluster() + ": "}
				readyz(m.Ready, m.Queue().DB(), readyTimeout).ServeHTTP(rec, r)
				if rec.failed {
					return
				}
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "ready")
		})
		stopMetrics, err := serveMetricsFor(ctx, f.MetricsListen, exp, cfg.MeterProvider, members, ready, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	logStats := func(msg string) {
		for _, s := range g.Stats() {
			logger.Info(msg, "cluster", s.Cluster, "stats", fmt.Sprintf("%+v", s.Stats))
		}
	}
	if f.StatsInterval > 0 {
		go func() {
			t := time.NewTicker(f.StatsInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					logStats("worker: stats")
				case <-g.Done():
					return
				}
			}
		}()
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	err = g.Run(ctx)
	logStats("worker: exiting")
	return err
}

// statusRecorder passes a member's /readyz answer through only when it
// fails (503), its text prefixed with the member's cluster; a success is
// swallowed, so the next member is asked.
type statusRecorder struct {
	http.ResponseWriter
	prefix string
	failed bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if code != http.StatusOK {
		s.failed = true
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.failed {
		return len(b), nil
	}
	return s.ResponseWriter.Write(append([]byte(s.prefix), b...))
}
