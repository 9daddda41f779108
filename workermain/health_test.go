package workermain

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/worker"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRunMainHealth: the metrics listener answers /healthz at once and
// /readyz once the worker claims; /metrics parses with Prometheus's parser,
// with no otel_scope_* label and the program's name as the service.
func TestRunMainHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- RunMain(func(w *worker.Worker) error {
			return worker.RegisterRaw(w, "probed", func(context.Context, *worker.RawJob) error { return nil }, worker.HandlerOptions{})
		}, MainOptions{AllowEmbedded: true, Args: []string{"-embedded", "-metrics-listen", "127.0.0.1:0"}, Context: ctx, Stderr: &stderr})
	}()
	var addr string
	deadline := time.Now().Add(waitLimit)
	for addr == "" {
		if m := metricsAddr.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no metrics address logged:\n%s", stderr.String())
		} else {
			time.Sleep(5 * time.Millisecond) // waiting for the log line, not for time
		}
	}
	if code, body := get(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	for {
		code, body := get(t, "http://"+addr+"/readyz")
		if code == 200 && body == "ready\n" {
			break
		}
		if code != 503 || !strings.HasPrefix(body, "not ready: ") {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never ready: %q", body)
		}
		time.Sleep(5 * time.Millisecond) // waiting for the first clock check, not for time
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetName(), "otel_scope_") {
					t.Errorf("%s carries %s", name, l.GetName())
				}
				if name == "target_info" && l.GetName() == "service_name" && strings.HasPrefix(l.GetValue(), "unknown_service") {
					t.Errorf("target_info: service_name %q", l.GetValue())
				}
			}
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("RunMain: %v", err)
	}
}

// stuckDB answers no read version until the caller gives up, as an
// unreachable cluster does.
type stuckDB struct{ kv.Database }

func (stuckDB) ReadTransact(ctx context.Context, _ func(kv.ReadTransaction) error) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestReadyz: 503 with the worker's reason while it is not ready, or when
// the database does not answer within the deadline; 200 otherwise.
func TestReadyz(t *testing.T) {
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	notRunning := func() error { return worker.ErrNotRunning }
	ok := func() error { return nil }
	for _, tc := range []struct {
		name  string
		ready func() error
		db    kv.Database
		limit time.Duration
		code  int
		body  string
	}{
		{"ready", ok, db, waitLimit, 200, "ready\n"},
		{"worker not running", notRunning, db, waitLimit, 503, "not ready: worker: not running\n"},
		// The deadline is short so the test is; the database never answers.
		{"database stuck", ok, stuckDB{db}, time.Millisecond, 503, "not ready: database not reachable within 1ms: context deadline exceeded\n"},
	} {
		srv := httptest.NewServer(readyz(tc.ready, tc.db, tc.limit))
		code, body := get(t, srv.URL)
		srv.Close()
		if code != tc.code || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, body, tc.code, tc.body)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(healthz))
	defer srv.Close()
	if code, body := get(t, srv.URL); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
}
