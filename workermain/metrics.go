package workermain

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	qmetrics "github.com/quickfdb/quickfdb/metrics"
	"github.com/quickfdb/quickfdb/worker"
)

// serveMetrics serves exp at http://addr/metrics for RunMain's
// -metrics-listen, with /healthz and /readyz (health.go), and runs a queue depth reporter for the worker's task
// types (only one reporter of the fleet measures at a time: see
// metrics.DepthReporter). The returned function stops both.
func serveMetrics(ctx context.Context, addr string, exp *qmetrics.Exporter, mp metric.MeterProvider, w *worker.Worker, logger *slog.Logger) (func(), error) {
	return serveMetricsFor(ctx, addr, exp, mp, []*worker.Worker{w}, readyz(w.Ready, w.Queue().DB(), readyTimeout), logger)
}

// serveMetricsFor is serveMetrics for the workers ws (a Group's members,
// each with its depth reporter on its own cluster), with ready at /readyz.
func serveMetricsFor(ctx context.Context, addr string, exp *qmetrics.Exporter, mp metric.MeterProvider, ws []*worker.Worker, ready http.Handler, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: -metrics-listen %s: %w", ErrFlags, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	mux.HandleFunc("/healthz", healthz)
	mux.Handle("/readyz", ready)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	logger.Info("worker: serving metrics", "addr", ln.Addr().String(), "path", "/metrics", "health", "/healthz", "ready", "/readyz")

	repCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, w := range ws {
		rep, err := qmetrics.NewDepthReporter(mp, qmetrics.DepthOptions{Queue: w.Queue(), Holder: w.ID(), TaskTypes: w.TaskTypes(), Logger: logger, Cluster: w.Cluster()})
		if err != nil {
			cancel()
			wg.Wait()
			srv.Close()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Run(repCtx)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		shutCtx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(shutCtx)
	}, nil
}
