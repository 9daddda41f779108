package metrics

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestDepthTenantOldestReadyAge: each top tenant reports the age of its
// oldest ready job, and a reporter given a Cluster labels every series
// with it (one reporter per cluster of a worker.Group, one MeterProvider).
func TestDepthTenantOldestReadyAge(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.clk.Advance(90 * time.Second)
	// 120 starts of acme in the minute before this one, as workers count
	// them (worker/tenantstarts.go: S (1, "tr", minute, type, itemSpace)).
	minute := f.clk.Now().Unix()/60 - 1
	if err := f.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], 120)
		tr.Set(f.q.Root().Sub("tr").Pack(tuple.Tuple{minute, "email", "acme"}), b[:])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	r, err := NewDepthReporter(mp, DepthOptions{Queue: f.q, Holder: "w", Interval: 10 * time.Second, TopTenants: 2, Cluster: "east"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	ages := map[string]float64{}
	rates := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[float64]
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if c, _ := dp.Attributes.Value("cluster"); c.AsString() != "east" {
						t.Errorf("%s: a series without cluster=east: %v", m.Name, dp.Attributes)
					}
				}
			}
			for _, dp := range points {
				if c, _ := dp.Attributes.Value("cluster"); c.AsString() != "east" {
					t.Errorf("%s: a series without cluster=east: %v", m.Name, dp.Attributes)
				}
				if m.Name == "quickfdb.queue.tenant_start_rate" {
					if tt, _ := dp.Attributes.Value("task_type"); tt.AsString() == "email" {
						is, _ := dp.Attributes.Value("item_space")
						rates[is.AsString()] = dp.Value
					}
				}
				if m.Name == "quickfdb.queue.tenant_oldest_ready_age" {
					if tt, _ := dp.Attributes.Value("task_type"); tt.AsString() == "email" {
						is, _ := dp.Attributes.Value("item_space")
						ages[is.AsString()] = dp.Value
					}
				}
			}
		}
	}
	if len(ages) == 0 || len(ages) > 2 {
		t.Fatalf("tenant_oldest_ready_age %v: want the top tenants (at most 2)", ages)
	}
	// 120 starts over the last minute and the current one's elapsed part.
	if r := rates["acme"]; r < 1 || r > 2 {
		t.Errorf("acme's start rate %v/s, want 120 over 60 to 120 s", r)
	}
	if len(rates) != len(ages) {
		t.Errorf("start rates %v for the top tenants %v", rates, ages)
	}
	for is, a := range ages {
		if a < 90 {
			t.Errorf("tenant %s: oldest ready age %v s, want at least the 90 s advanced since the enqueue", is, a)
		}
	}
}
