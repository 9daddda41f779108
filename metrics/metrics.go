// Package metrics exposes quickfdb's OpenTelemetry metrics to Prometheus,
// and measures queue depth once for the whole fleet.
//
// An Exporter is an OpenTelemetry MeterProvider (the SDK's) whose reader is
// the OpenTelemetry Prometheus exporter, over a Prometheus registry of its
// own: pass MeterProvider() to worker.Config.MeterProvider, and serve
// Handler() at /metrics. workermain.Main does both with -metrics-listen; the web
// console (quick ui) mounts Handler(). Default() is one Exporter per process,
// so a worker and a console in the same process share it.
//
// Queue depth (ready, leased, scheduled and dead jobs per task type, and
// per top tenant) is not something each worker should measure: each
// measurement reads up to a budget of keys per type, and N workers would
// pay it N times and report N copies.
// DepthReporter makes one worker at a time do it, under a short lease key
// (see depth.go).
package metrics

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Exporter is a MeterProvider whose metrics a Prometheus handler serves.
type Exporter struct {
	reg      *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// New returns an Exporter with its own Prometheus registry, holding the Go
// runtime and process collectors besides the OpenTelemetry metrics.
func New() (*Exporter, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(prometheus.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := reg.Register(prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	return &Exporter{
		reg:      reg,
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// MeterProvider is where instruments record (worker.Config.MeterProvider).
func (e *Exporter) MeterProvider() metric.MeterProvider { return e.provider }

// Handler serves the metrics in Prometheus's text format.
func (e *Exporter) Handler() http.Handler { return e.handler }

var (
	defaultOnce sync.Once
	defaultExp  *Exporter
	defaultErr  error
)

// Default returns the process's shared Exporter, made on first use.
func Default() (*Exporter, error) {
	defaultOnce.Do(func() { defaultExp, defaultErr = New() })
	return defaultExp, defaultErr
}

// Handler serves the default Exporter's metrics: mount it at /metrics.
func Handler() http.Handler {
	e, err := Default()
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	return e.Handler()
}

// MeterProvider is the default Exporter's MeterProvider, or nil if it
// could not be made (Default says why).
func MeterProvider() metric.MeterProvider {
	e, err := Default()
	if err != nil {
		return nil
	}
	return e.MeterProvider()
}
