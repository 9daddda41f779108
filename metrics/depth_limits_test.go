package metrics

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/quickfdb/quickfdb/quick"
)

// TestDepthTenantLimits: the top tenants that have limits report their
// running jobs against them; the others add no series.
func TestDepthTenantLimits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.q.SetTenantLimits(ctx, "email", "globex", quick.Limits{Concurrency: 5, Rate: 2.5}); err != nil {
		t.Fatal(err)
	}
	c, err := f.q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, l := range c.Jobs {
		if l.ItemSpace == "globex" {
			claimed++
		}
	}
	r, reader := newReporter(t, f, "worker-a")
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	running := gauge(t, reader, "quickfdb.queue.tenant_running")
	if len(running) != 1 || running["email/globex/"] != int64(claimed) {
		t.Errorf("tenant_running %v, want only email/globex = %d", running, claimed)
	}
	limits := floatGauge(t, reader, "quickfdb.queue.tenant_limit")
	if len(limits) != 2 || limits["email/globex/concurrency"] != 5 || limits["email/globex/rate"] != 2.5 {
		t.Errorf("tenant_limit %v", limits)
	}
}

// floatGauge collects a float gauge as task_type/item_space/limit -> value.
func floatGauge(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]float64 {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
				k, _ := dp.Attributes.Value("task_type")
				is, _ := dp.Attributes.Value("item_space")
				l, _ := dp.Attributes.Value("limit")
				out[k.AsString()+"/"+is.AsString()+"/"+l.AsString()] = dp.Value
			}
		}
	}
	return out
}
