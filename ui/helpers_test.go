package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/ui"
)

var epoch = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// fixture is a queue on memkv with a fake clock, holding jobs in every
// state, and the console over it.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	q    *quick.Queue
	clk  *clock.Fake
	h    *ui.Handler
	srv  *httptest.Server
	dead []quick.ID // dead letters, oldest first
}

func newFixture(t *testing.T, cfg ui.Config) *fixture {
	t.Helper()
	db := memkv.Open(memkv.Options{})
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(epoch)
	ctx := context.Background()
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"t"}), testOptions(quick.Options{Clock: clk, MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, q: q, clk: clk}
	cfg.Queue = q
	cfg.NoSampler = true
	if f.h, err = ui.New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Close() })
	var handler http.Handler = f.h
	if cfg.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(cfg.Prefix+"/", f.h)
		handler = mux
	}
	f.srv = httptest.NewServer(handler)
	t.Cleanup(f.srv.Close)
	return f
}

// testOptions are the options of the tests' queues.
func testOptions(o quick.Options) quick.Options { return o }

// claim takes o.Max jobs, claim after claim (each takes from one lane of
// one zone).
func claim(t testing.TB, q *quick.Queue, o quick.ClaimOptions) []quick.Lease {
	t.Helper()
	var got []quick.Lease
	for range o.Max {
		want := o
		want.Max = o.Max - len(got)
		c, err := q.Consumer().Claim(context.Background(), want)
		if err != nil {
			t.Fatalf("claim %s: %v", o.TaskType, err)
		}
		got = append(got, c.Jobs...)
		if len(got) >= o.Max || len(c.Jobs) == 0 {
			break
		}
	}
	if len(got) != o.Max {
		t.Fatalf("claim %s: %d jobs, want %d", o.TaskType, len(got), o.Max)
	}
	return got
}

// seed enqueues ready, scheduled, leased and dead jobs of two types, for
// three tenants and none: 12 ready emails (8 of acme, 4 of globex), 5
// emails of later scheduled, 6 webhooks without a tenant.
func (f *fixture) seed() {
	f.t.Helper()
	var jobs []quick.NewJob
	for i := range 12 {
		tenant := "acme"
		if i%3 == 2 {
			tenant = "globex"
		}
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: tenant, Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	for i := range 5 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "later", Delay: time.Duration(i+1) * time.Minute, UniqueKey: fmt.Sprintf("later-%d", i)})
	}
	for i := range 6 {
		jobs = append(jobs, quick.NewJob{TaskType: "webhook", Payload: []byte{0xff, byte(i)}})
	}
	if _, err := f.q.Enqueue(f.ctx, jobs...); err != nil {
		f.t.Fatal(err)
	}
	// 3 email jobs leased; 4 webhooks dead (2 with "410", 2 with "timeout").
	claim(f.t, f.q, quick.ClaimOptions{TaskType: "email", Holder: "worker-a", Max: 3, Lease: time.Minute})
	for i := range 4 {
		l := claim(f.t, f.q, quick.ClaimOptions{TaskType: "webhook", Holder: "worker-b", Max: 1, Lease: time.Minute})[0]
		msg := "remote answered 410 Gone"
		if i%2 == 1 {
			msg = "timeout after 30s"
		}
		if err := f.q.Fail(f.ctx, l, msg); err != nil {
			f.t.Fatalf("fail: %v", err)
		}
		if info, err := f.q.Get(f.ctx, l.ID); err != nil || info.State != quick.StateDead {
			f.t.Fatalf("failed job %+v %v, want dead", info, err)
		}
		f.dead = append(f.dead, l.ID)
		f.clk.Advance(time.Second)
	}
}

type resp struct {
	status int
	body   string
	loc    string
}

func (f *fixture) do(req *http.Request) resp {
	f.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, string(b), r.Header.Get("Location")}
}

func (f *fixture) get(path string) resp {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	return f.do(req)
}

// post posts a form as a same-origin browser would.
func (f *fixture) post(path string, form url.Values) resp {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return f.do(req)
}

// cell reads the count a page shows in <tr data-type="T"> … <td data-k="K">.
func cell(t *testing.T, body, taskType, k string) int {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-type="` + regexp.QuoteMeta(taskType) + `">(.*?)</tr>`).FindStringSubmatch(body)
	if row == nil {
		t.Fatalf("no row for %s", taskType)
	}
	m := regexp.MustCompile(`(?s)data-k="` + k + `">(?:<a [^>]*>)?([0-9]+)`).FindStringSubmatch(row[1])
	if m == nil {
		t.Fatalf("no %s cell in the %s row: %s", k, taskType, row[1])
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func (f *fixture) state(id quick.ID) quick.State {
	f.t.Helper()
	j, err := f.q.Get(f.ctx, id)
	if quick.IsNotFound(err) {
		// A finished zones job is not found until issue 21's surfaces make
		// Get tell it finished.
		return quick.StateFinished
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return j.State
}
