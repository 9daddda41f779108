package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// scrape GETs h's /metrics and parses it with Prometheus's own parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestExporterLabels: no series carries the exporter's otel_scope_* labels;
// target_info names the service; a gauge of two workers sharing the
// process's MeterProvider is two series, one per worker.
func TestExporterLabels(t *testing.T) {
	exp, err := New(WithServiceName("email-worker"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"m"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w1", "w2"} {
		w, err := worker.New(worker.Config{Queue: q, ID: id, MeterProvider: exp.MeterProvider()})
		if err != nil {
			t.Fatal(err)
		}
		if err := worker.RegisterRaw(w, "email", func(context.Context, *worker.RawJob) error { return nil }, worker.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, exp.Handler())
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for l := range labels(m) {
				if strings.HasPrefix(l, "otel_scope_") {
					t.Errorf("%s carries %s", name, l)
				}
			}
		}
	}
	ti := fams["target_info"]
	if ti == nil || len(ti.GetMetric()) != 1 || labels(ti.GetMetric()[0])["service_name"] != "email-worker" {
		t.Errorf("target_info: %v", ti)
	}
	running := fams["quickfdb_worker_jobs_running"]
	if running == nil {
		t.Fatalf("no quickfdb_worker_jobs_running among %d families", len(fams))
	}
	var workers []string
	for _, m := range running.GetMetric() {
		l := labels(m)
		if l["task_type"] != "email" {
			t.Errorf("series %v", l)
		}
		workers = append(workers, l["worker"])
	}
	sort.Strings(workers)
	if strings.Join(workers, ",") != "w1,w2" {
		t.Errorf("quickfdb_worker_jobs_running series by worker: %v, want w1 and w2", workers)
	}
}

// TestDefaultServiceName: without WithServiceName (and without
// OTEL_SERVICE_NAME), the service is named after the program, not
// OpenTelemetry's "unknown_service:...".
func TestDefaultServiceName(t *testing.T) {
	if os.Getenv("OTEL_SERVICE_NAME") != "" || strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name") {
		t.Skip("the environment names the service")
	}
	res, err := serviceResource("")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := res.Set().Value("service.name")
	if strings.HasPrefix(v.AsString(), "unknown_service") || v.AsString() == "" {
		t.Errorf("service.name %q", v.AsString())
	}
	if want := strings.TrimSuffix(filepath.Base(testProgram()), ".exe"); v.AsString() != want {
		t.Errorf("service.name %q, want the program's name %q", v.AsString(), want)
	}
}

func testProgram() string { return os.Args[0] }
