package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	q   *quick.Queue
	db  *kv.CountedDB
	clk *clock.Fake
}

// newFixture is a zones queue with three tenants: "email" holds 7 ready
// jobs (4 of acme, 2 of globex, 1 of initech), 1 scheduled (acme), and of
// the ready ones 3 are claimed, one of them then dead-lettered; "report"
// holds 1 ready job.
func newFixture(t *testing.T) fixture {
	m := memkv.Open(memkv.Options{})
	t.Cleanup(func() { m.Close() })
	db := kv.WithCounters(m)
	clk := clock.NewFake(epoch)
	q, err := quick.Open(context.Background(), db, tuple.FromTuple(tuple.Tuple{"m"}), quick.Options{Clock: clk, ZoneLanes: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// acme's jobs first, and 3 of its 4 ready jobs claimed (one then
	// dead-lettered) before the other tenants have any.
	var jobs []quick.NewJob
	for range 4 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "acme", Delay: time.Hour})
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	c, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 3, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 3 || c.Jobs[0].ItemSpace != "acme" {
		t.Fatalf("claim: %+v %v", c.Jobs, err)
	}
	if err := q.DeadLetter(ctx, c.Jobs[0], "boom"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	jobs = nil
	for _, ts := range []string{"globex", "globex", "initech"} {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: ts})
	}
	jobs = append(jobs, quick.NewJob{TaskType: "report"})
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	return fixture{q: q, db: db, clk: clk}
}

func newReporter(t *testing.T, f fixture, holder string) (*DepthReporter, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	r, err := NewDepthReporter(mp, DepthOptions{Queue: f.q, Holder: holder, Interval: 10 * time.Second, TopTenants: 2})
	if err != nil {
		t.Fatal(err)
	}
	return r, reader
}

// depths collects the depth gauge as task_type/state -> value.
func depths(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	return gauge(t, reader, "quickfdb.queue.depth")
}

// gauge collects an int gauge as its attributes task_type[/item_space]/state
// -> value.
func gauge(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]int64 {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				k, _ := dp.Attributes.Value("task_type")
				key := k.AsString()
				if is, ok := dp.Attributes.Value("item_space"); ok {
					key += "/" + is.AsString()
				}
				st, _ := dp.Attributes.Value("state")
				out[key+"/"+st.AsString()] = dp.Value
			}
		}
	}
	return out
}

// TestDepthOneReporterAtATime: of two reporters only the lease holder
// scans and reports; when it stops renewing, the other takes over after
// the lease (3 intervals) and reports the same figures.
func TestDepthOneReporterAtATime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, ra := newReporter(t, f, "worker-a")
	b, rb := newReporter(t, f, "worker-b")
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	before := f.db.Stats()
	if err := b.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if cost := f.db.Stats().Sub(before); cost.RangeReads != 0 || cost.Reads != 1 || cost.Mutations != 0 {
		t.Errorf("the non-holder's round cost %+v, want one point read", cost)
	}
	if !a.Holding() || b.Holding() {
		t.Fatalf("holding: a %v, b %v", a.Holding(), b.Holding())
	}
	want := map[string]int64{
		"email/ready": 4, "email/leased": 2, "email/scheduled": 1, "email/dead": 1,
		"report/ready": 1, "report/leased": 0, "report/scheduled": 0, "report/dead": 0,
	}
	got := depths(t, ra)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	// Per tenant: the top 2 by ready jobs (globex 2, then acme 1 and
	// initech 1 by oldest ready, then name: acme), 3 states each.
	wantTenants := map[string]int64{
		"email/globex/ready": 2, "email/globex/leased": 0, "email/globex/scheduled": 0,
		"email/acme/ready": 1, "email/acme/leased": 2, "email/acme/scheduled": 1,
		"report//ready": 1, "report//leased": 0, "report//scheduled": 0,
	}
	gotTenants := gauge(t, ra, "quickfdb.queue.tenant_depth")
	if len(gotTenants) != len(wantTenants) {
		t.Errorf("tenant series %v, want %v", gotTenants, wantTenants)
	}
	for k, v := range wantTenants {
		if n, ok := gotTenants[k]; !ok || n != v {
			t.Errorf("tenant %s = %d (%v), want %d (all: %v)", k, n, ok, v, gotTenants)
		}
	}
	if got := depths(t, rb); len(got) != 0 {
		t.Errorf("the non-holder reports %v", got)
	}

	// a stops (no more rounds); within three intervals b takes over.
	f.clk.Advance(31 * time.Second)
	if err := b.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.Holding() || a.Holding() {
		t.Fatalf("after a's lease: a %v, b %v", a.Holding(), b.Holding())
	}
	if got := depths(t, rb); got["email/ready"] != 4 || got["email/dead"] != 1 {
		t.Errorf("b reports %v", got)
	}
	if got := depths(t, ra); len(got) != 0 {
		t.Errorf("a still reports %v after losing the lease", got)
	}
}

// TestDepthCorruptLease: garbage in the lease key does not stop the
// measurement: the next reporter takes the lease over.
func TestDepthCorruptLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, _ := newReporter(t, f, "worker-a")
	if err := f.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(a.key, []byte{0xff, 0xff, 0xff})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Round(ctx); err != nil || !a.Holding() {
		t.Fatalf("round over a corrupt lease: %v, holding %v", err, a.Holding())
	}
}

func FuzzDecodeLease(f *testing.F) {
	f.Add(encodeLease("worker-a", epoch))
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, until, err := decodeLease(b)
		if err != nil {
			return
		}
		h2, until2, err := decodeLease(encodeLease(h, until))
		if err != nil || h2 != h || !until2.Equal(until) {
			t.Fatalf("round trip: %q %v -> %q %v %v", h, until, h2, until2, err)
		}
	})
}

// TestHandlerServesOTelMetrics: an instrument recorded through the
// Exporter's MeterProvider is served in Prometheus's text format.
func TestHandlerServesOTelMetrics(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.MeterProvider().Meter("test").Int64Counter("quickfdb.test.things")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 3)
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "quickfdb_test_things_total") || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("/metrics:\n%.2000s", body)
	}
	if Handler() == nil || MeterProvider() == nil {
		t.Error("no default exporter")
	}
}
