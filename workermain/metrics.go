package workermain

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: -metrics-listen %s: %w", ErrFlags, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler())
	mux.HandleFunc("/healthz", healthz)
	mux.Handle("/readyz", readyz(w.Ready, w.Queue().DB(), readyTimeout))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	logger.Info("worker: serving metrics", "addr", ln.Addr().String(), "path", "/metrics", "health", "/healthz", "ready", "/readyz")

	rep, err := qmetrics.NewDepthReporter(mp, qmetrics.DepthOptions{Queue: w.Queue(), Holder: w.ID(), TaskTypes: w.TaskTypes(), Logger: logger})
	if err != nil {
		srv.Close()
		return nil, err
	}
	repCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep.Run(repCtx)
	}()
	return func() {
		cancel()
		<-done
		shutCtx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		srv.Shutdown(shutCtx)
	}, nil
}
