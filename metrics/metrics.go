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
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Exporter is a MeterProvider whose metrics a Prometheus handler serves.
type Exporter struct {
	reg      *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// Option configures New.
type Option func(*config)

type config struct {
	serviceName string
}

// WithServiceName sets the service name the metrics are exported under
// (the resource's service.name, shown by the target_info series). Without
// it: OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) if
// set, else the program's file name, where OpenTelemetry's default would be
// "unknown_service:NAME".
func WithServiceName(name string) Option {
	return func(c *config) { c.serviceName = name }
}

// New returns an Exporter with its own Prometheus registry, holding the Go
// runtime and process collectors besides the OpenTelemetry metrics.
//
// Series carry only their own labels: the exporter's otel_scope_* labels
// are off (every quickfdb metric has a name of its own, and the scope's
// version and schema URL were empty labels on every series). target_info
// carries the resource: the service name (WithServiceName) and the SDK's
// attributes.
func New(opts ...Option) (*Exporter, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	res, err := serviceResource(cfg.serviceName)
	if err != nil {
		return nil, fmt.Errorf("metrics: resource: %w", err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(prometheus.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := reg.Register(prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	return &Exporter{
		reg:      reg,
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// serviceResource is OpenTelemetry's default resource (the SDK's
// attributes, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) with its service
// name set: name if given, else the environment's, else the program's
// file name.
func serviceResource(name string) (*resource.Resource, error) {
	def := resource.Default()
	if name == "" {
		if v, ok := def.Set().Value("service.name"); ok && !strings.HasPrefix(v.AsString(), "unknown_service") {
			return def, nil
		}
		name = strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	}
	return resource.Merge(def, resource.NewSchemaless(attribute.String("service.name", name)))
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
