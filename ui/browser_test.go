package ui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/ui"
	"github.com/quickfdb/quickfdb/worker"
)

// The browser tests drive a real headless Chromium (Debian's package) with
// chromedp against the console serving a live queue on 127.0.0.1. Without
// Chromium they skip; with QUICKFDB_REQUIRE_BROWSER=1 (set by .ci/run) the
// skip is a failure. Screenshots go to $QUICKFDB_SCREENSHOTS, or a
// temporary directory.

// chromiumPath finds the browser or skips (fails when it is required).
func chromiumPath(t *testing.T) string {
	t.Helper()
	required := os.Getenv("QUICKFDB_REQUIRE_BROWSER") == "1"
	if p := os.Getenv("QUICKFDB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if required {
		t.Fatal("QUICKFDB_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install -y chromium, or set QUICKFDB_CHROMIUM)")
	}
	t.Skip("no chromium on PATH: the browser tests need Debian's chromium package (apt-get install -y chromium); set QUICKFDB_REQUIRE_BROWSER=1 to make this a failure")
	return ""
}

// browser starts headless Chromium with a fresh profile and the flags that
// keep it off the network, and returns a chromedp context.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return bctx
}

func screenshotDir(t *testing.T) string {
	if d := os.Getenv("QUICKFDB_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// liveQueue is a demo-like queue of several tenants that is live yet holds
// still where the test compares numbers: a worker runs import jobs that
// block (leased, with their leases renewed) and a cron schedule every
// second; email jobs of three tenants wait with no worker (ready), the hot
// tenant acme's zone spread over 4 lanes; reports are an hour out
// (scheduled); webhooks are failed into the dead letters by the test
// itself.
type liveQueue struct {
	q       *quick.Queue
	w       *worker.Worker
	release chan struct{}
	dead    []quick.ID
	retries []quick.ID
	// more are workers beside w in the same process, for the workers
	// page's grouping.
	more []*worker.Worker
}

func startLiveQueue(t *testing.T) *liveQueue {
	t.Helper()
	ctx := context.Background()
	db := memkv.Open(memkv.Options{})
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"browser"}), testOptions(quick.Options{Clock: clock.Real(), MaxAttempts: 1,
		// sync's failed jobs wait an hour for their retry: the retries page holds still.
		TaskTypes: map[string]quick.TaskTypeOptions{"sync": {Backoff: func(int) time.Duration { return time.Hour }}}}))
	if err != nil {
		t.Fatal(err)
	}
	lq := &liveQueue{q: q, release: make(chan struct{})}
	if err := q.SetZoneLanes(ctx, "email", "acme", 4); err != nil {
		t.Fatal(err)
	}
	var jobs []quick.NewJob
	for i := range 20 {
		tenant := "acme"
		switch {
		case i%5 == 3:
			tenant = "globex"
		case i%10 == 9:
			tenant = "initech"
		}
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: tenant, Payload: fmt.Appendf(nil, `{"to":"user%d@example.com"}`, i)})
	}
	for i := range 5 {
		jobs = append(jobs, quick.NewJob{TaskType: "report", Delay: time.Hour, UniqueKey: fmt.Sprintf("report-%d", i)})
	}
	for i := range 6 {
		jobs = append(jobs, quick.NewJob{TaskType: "webhook", Priority: quick.High, Payload: fmt.Appendf(nil, `{"hook":%d}`, i)})
	}
	for range 3 {
		jobs = append(jobs, quick.NewJob{TaskType: "import", Priority: quick.Low, Payload: []byte(`{"file":"big.csv"}`)})
	}
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		l := claim(t, q, quick.ClaimOptions{TaskType: "webhook", Holder: "test", Max: 1, Lease: quick.MinLease})[0]
		if err := q.Fail(ctx, l, fmt.Sprintf("webhook %d: remote answered 410 Gone", i)); err != nil {
			t.Fatal(err)
		}
		lq.dead = append(lq.dead, l.ID)
	}
	// Two sync jobs fail once and wait for their retry (an hour away).
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "sync", MaxAttempts: 5, Payload: []byte(`{"account":"acme"}`)},
		quick.NewJob{TaskType: "sync", MaxAttempts: 5, Payload: []byte(`{"account":"globex"}`)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		l := claim(t, q, quick.ClaimOptions{TaskType: "sync", Holder: "test", Max: 1, Lease: quick.MinLease})[0]
		if err := q.Fail(ctx, l, fmt.Sprintf("sync %d: upstream answered 503", i)); err != nil {
			t.Fatal(err)
		}
		lq.retries = append(lq.retries, l.ID)
	}
	if err := cron.Register(ctx, q, cron.Schedule{Name: "tick", Spec: "@every 1s", TaskType: "tick", MissedRuns: cron.SkipAll}); err != nil {
		t.Fatal(err)
	}
	lq.w, err = worker.New(worker.Config{Queue: q, ID: "worker-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), HeartbeatPeriod: 500 * time.Millisecond, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.RegisterRaw(lq.w, "import", func(ctx context.Context, j *worker.RawJob) error {
		select {
		case <-lq.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.HandlerOptions{Lease: quick.MinLease, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	if err := cron.Handle(lq.w, "tick", func(context.Context, cron.Occurrence) error { return nil }, worker.HandlerOptions{Lease: quick.MinLease}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"worker-2", "worker-3"} {
		w, err := worker.New(worker.Config{Queue: q, ID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), HeartbeatPeriod: 500 * time.Millisecond, ShutdownTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := worker.RegisterRaw(w, "audit", func(context.Context, *worker.RawJob) error { return nil }, worker.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		lq.more = append(lq.more, w)
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range append([]*worker.Worker{lq.w}, lq.more...) {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(wctx) }()
	}
	t.Cleanup(func() {
		close(lq.release)
		sctx, c := context.WithTimeout(ctx, 3*time.Second)
		lq.w.Stop(sctx)
		for _, w := range lq.more {
			w.Stop(sctx)
		}
		c()
		stop()
		wg.Wait()
		db.Close()
	})
	// Wait until the worker holds the three imports.
	for {
		d, err := q.Depth(ctx, quick.DepthOptions{TaskType: "import"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Leased == 3 {
			break
		}
		select {
		case <-lq.w.Done():
			t.Fatal("worker stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return lq
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("not a count: %q", s)
	}
	return n
}

// libCounts is what the library says of a task type.
func libCounts(t *testing.T, q *quick.Queue, typ string) map[string]int {
	t.Helper()
	d, err := q.Depth(context.Background(), quick.DepthOptions{TaskType: typ})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]int{"ready": d.Ready, "leased": d.Leased, "scheduled": d.Scheduled, "dead": int(d.Dead)}
}

// TestBrowserConsole loads every page in Chromium, checks what a person
// would (the overview's counts are the library's, the live refresh shows
// new jobs, the tenants are ranked as the library ranks them, the hot
// tenant's zone shows its lanes, the workers are there), requeues a dead
// letter through the confirmation step, and saves a screenshot of each
// page.
func TestBrowserConsole(t *testing.T) {
	if testing.Short() && os.Getenv("QUICKFDB_REQUIRE_BROWSER") != "1" {
		t.Skip("browser test skipped in -short mode")
	}
	ctx := browser(t)
	lq := startLiveQueue(t)
	h, err := ui.New(ui.Config{Queue: lq.q, Refresh: 300 * time.Millisecond, SampleEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	base := serve(t, h)
	dir := screenshotDir(t)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a safety net for a hung browser, not a measurement
	defer cancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The live refresh replaces parts of the page while the test reads it,
	// so every read and click is one JavaScript evaluation: it sees the
	// page between two refreshes, never a node the refresh detached, and it
	// polls until the element is there.
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Poll[struct{ T string }](`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); return e ? {T: e.textContent} : null })()`))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return v.T
	}
	click := func(sel string) chromedp.Action[chromedp.Void] {
		poll := chromedp.Poll[bool](`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); if (!e) return false; e.click(); return true })()`)
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := poll(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatalf("count %s: %v", sel, err)
		}
		return n
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	// until waits for a page state: expr, evaluated again and again, is
	// true (one evaluation sees one state of the page, never a node the
	// live refresh replaced midway).
	until := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Overview: every count shown is the library's.
	do("overview", chromedp.Navigate(base+"/"), visible(`#types`))
	for _, typ := range []string{"email", "report", "webhook", "import"} {
		want := libCounts(t, lq.q, typ)
		for _, k := range []string{"ready", "leased", "scheduled", "dead"} {
			if got := atoi(t, text(`tr[data-type="`+typ+`"] td[data-k="`+k+`"]`)); got != want[k] {
				t.Errorf("overview %s %s: shows %d, library says %d", typ, k, got, want[k])
			}
		}
	}
	// Live refresh: jobs enqueued now show up without a reload.
	var more []quick.NewJob
	for range 7 {
		more = append(more, quick.NewJob{TaskType: "email"})
	}
	if _, err := lq.q.Enqueue(context.Background(), more...); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('tr[data-type="email"] td[data-k="ready"]').textContent.trim() === "27"`)); err != nil {
		t.Fatalf("live refresh: the new jobs never showed: %v", err)
	}
	// One snapshot per page: email's chart legend says what its row says,
	// both read in one evaluation.
	snap, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => {
		const c = document.querySelector('tr[data-type="email"] td[data-k="ready"]');
		const l = [...document.querySelectorAll('[data-chart="email"] .legend span')].find(e => e.textContent.startsWith('ready '));
		return c && l ? [c.textContent.trim(), l.textContent.slice(6).trim()] : null })()`))
	if err != nil {
		t.Fatalf("read email's row and chart: %v", err)
	}
	if snap[0] != "27" || snap[1] != snap[0] {
		t.Errorf("email ready: table %s, chart legend %s; want both 27", snap[0], snap[1])
	}
	// Fleet throughput: the cron ticks the worker completes reach the
	// database's counters with its clock rounds, and the overview.
	until("fleet throughput", `(() => { const c = document.querySelector('tr[data-type="tick"] td[data-k="completed"]');
		return !!c && parseInt(c.textContent, 10) > 0 && document.querySelectorAll('#throughput svg polyline').length === 2 })()`)
	// Let the history draw its charts, then shoot.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('svg.chart polyline').length > 0 && document.querySelectorAll('.chart-empty').length === 0`,
		chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
		t.Fatalf("charts: %v", err)
	}
	shoot(t, ctx, dir, "overview")

	// Pause a type from the overview, through the confirmation page: the
	// row is marked paused and the library agrees.
	do("pause", click(`tr[data-type="report"] form[action$="/actions/pause"] button`), visible(`#confirm-yes`))
	if body := text(`.confirm`); !strings.Contains(body, "quick.Queue.Pause") || !strings.Contains(body, "docs/design.md") {
		t.Errorf("pause confirmation does not state the operation and its cost: %q", body)
	}
	if p, err := lq.q.PausedTypes(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("the confirmation page already paused: %v %v", p, err)
	}
	shoot(t, ctx, dir, "confirm-pause")
	do("confirm pause", click(`#confirm-yes`), visible(`.flash`), visible(`tr[data-type="report"][data-paused="1"] .paused`))
	if p, err := lq.q.PausedTypes(context.Background()); err != nil || len(p) != 1 || p["report"].IsZero() {
		t.Fatalf("after pausing through the console: PausedTypes = %v (%v), want report", p, err)
	}
	if n := count(`tr[data-paused]`); n != 1 {
		t.Errorf("overview marks %d types paused, want 1 (report)", n)
	}
	if n := count(`tr[data-type="report"] form[action$="/actions/resume"]`); n != 1 {
		t.Errorf("the paused type offers no Resume")
	}
	shoot(t, ctx, dir, "paused")
	// Resume it: the mark goes.
	do("resume", click(`tr[data-type="report"] form[action$="/actions/resume"] button`), visible(`#confirm-yes`))
	do("confirm resume", click(`#confirm-yes`), visible(`.flash`), visible(`tr[data-type="report"] form[action$="/actions/pause"]`))
	if p, err := lq.q.PausedTypes(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("after resuming: PausedTypes = %v (%v)", p, err)
	}

	// Tenants: email's tenants by ready work, as the library ranks them;
	// then the hot tenant's zone, one cell per lane.
	do("tenants", chromedp.Navigate(base+"/tenants?type=email"), visible(`.tenants`))
	d, err := lq.q.Depth(context.Background(), quick.DepthOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	first := d.Tenants[0]
	if first.ItemSpace != "acme" {
		t.Fatalf("the library ranks %q first, not acme: %+v", first.ItemSpace, d.Tenants)
	}
	shown, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => { const r = [...document.querySelectorAll('.tenants tbody tr')]; return r.length ? r.map(e => e.getAttribute('data-tenant')) : null })()`))
	if err != nil {
		t.Fatalf("read the tenants: %v", err)
	}
	var want []string
	for _, td := range d.Tenants {
		want = append(want, td.ItemSpace)
	}
	if strings.Join(shown, ",") != strings.Join(want, ",") {
		t.Errorf("tenants page shows %v, library ranks %v", shown, want)
	}
	if got := atoi(t, text(`tr[data-tenant="acme"] td[data-k="ready"]`)); got != first.Ready {
		t.Errorf("acme ready: shows %d, library says %d", got, first.Ready)
	}
	shoot(t, ctx, dir, "tenants")
	do("zone", click(`tr[data-tenant="acme"] a`), visible(`#strip`))
	if n, lanes := count(`#strip .cell`), atoi(t, text(`#zone-lanes`)); n != 4 || lanes != 4 {
		t.Errorf("acme's zone: %d cells, %d lanes; want 4 (SetZoneLanes)", n, lanes)
	}
	shoot(t, ctx, dir, "zone")

	// Jobs: the leased imports, then one job's detail.
	do("jobs", chromedp.Navigate(base+"/jobs?type=import&state=leased"), visible(`#jobs`))
	if n := count(`#jobs tbody tr`); n != 3 {
		t.Errorf("jobs: %d leased imports shown, want 3", n)
	}
	do("job detail", click(`#jobs tbody tr:first-child a`), visible(`#detail`))
	if st := strings.TrimSpace(text(`#detail td[data-k="state"]`)); st != "leased" {
		t.Errorf("job detail: state %q, want leased", st)
	}
	if where := text(`#detail`); !strings.Contains(where, "leased until") || strings.Contains(strings.ToLower(where), "vest") || strings.Contains(where, "S(") {
		t.Errorf("job detail is not in an operator's words: %q", where)
	}
	shoot(t, ctx, dir, "job")
	// Every email job, by time, with its args; the page refreshes live and
	// marks the type paused.
	do("jobs by time", chromedp.Navigate(base+"/jobs?type=email&limit=100"), visible(`#jobs`))
	until("jobs in time order with args", `(() => {
		const rows = [...document.querySelectorAll('#jobs tbody tr')];
		if (rows.length !== 27) return false;
		const at = rows.map(r => parseInt(r.getAttribute('data-at'), 10));
		const args = rows.filter(r => r.querySelector('td[data-k="args"]').textContent.includes('@example.com')).length;
		return at.every((v, i) => i === 0 || at[i-1] <= v) && args === 20 })()`)
	shoot(t, ctx, dir, "jobs")
	if err := lq.q.Pause(context.Background(), "email"); err != nil {
		t.Fatal(err)
	}
	if _, err := lq.q.Enqueue(context.Background(), quick.NewJob{TaskType: "email", Payload: []byte(`{"to":"late@example.com"}`)}); err != nil {
		t.Fatal(err)
	}
	until("jobs page: live paused mark and new job", `!!document.querySelector('#page-title .paused-mark') && document.querySelectorAll('#jobs tbody tr').length === 28`)
	if err := lq.q.Resume(context.Background(), "email"); err != nil {
		t.Fatal(err)
	}
	until("jobs page: the mark goes with a resume", `!document.querySelector('.paused-mark') && document.querySelectorAll('#jobs tbody tr').length === 28`)

	// An unknown task type is a 404 that says so.
	do("unknown type", chromedp.Navigate(base+"/jobs?type=nope"), visible(`#error`))
	if e := text(`#error`); !strings.Contains(e, "unknown task type") {
		t.Errorf("unknown type: %q", e)
	}

	// Retries: the two sync jobs waiting for their next attempt, with
	// their errors and args; the page opens on sync without being asked.
	do("retries", chromedp.Navigate(base+"/retries"), visible(`#retries`))
	until("retries listed", `(() => { const rows = [...document.querySelectorAll('#retries tbody tr')];
		return rows.length === 2 && rows.every(r => r.querySelector('td[data-k="error"]').textContent.includes('upstream answered 503') &&
			r.querySelector('td[data-k="args"]').textContent.includes('account')) })()`)
	shoot(t, ctx, dir, "retries")

	// Dead letters: requeue the oldest through the confirmation page.
	// Dead letters open where they are: webhook's, though email comes
	// first by name and has none.
	do("dead", chromedp.Navigate(base+"/dead"), visible(`#dead`))
	if n := atoi(t, text(`#dead-count`)); n != 6 {
		t.Fatalf("dead letters: page shows %d, want 6", n)
	}
	if typ := text(`#dead-types a.on`); !strings.HasPrefix(typ, "webhook") {
		t.Errorf("dead letters opened on %q, want webhook", typ)
	}
	if err := lq.q.Pause(context.Background(), "webhook"); err != nil {
		t.Fatal(err)
	}
	until("dead letters: live paused mark", `!!document.querySelector('#page-title .paused-mark')`)
	if err := lq.q.Resume(context.Background(), "webhook"); err != nil {
		t.Fatal(err)
	}
	until("dead letters: the mark goes", `!document.querySelector('.paused-mark')`)
	shoot(t, ctx, dir, "dead")
	target := lq.dead[0]
	do("requeue", click(`#dead tr[data-id="`+target.String()+`"] form[action$="/actions/requeue"] button`), visible(`#confirm-yes`))
	shoot(t, ctx, dir, "confirm")
	if j, _ := lq.q.Get(context.Background(), target); j.State != quick.StateDead {
		t.Fatalf("the confirmation page already changed the job: %v", j.State)
	}
	do("confirm", click(`#confirm-yes`), visible(`.flash`))
	if n := atoi(t, text(`#dead-count`)); n != 5 {
		t.Errorf("after requeue: page shows %d dead letters, want 5", n)
	}
	if j, err := lq.q.Get(context.Background(), target); err != nil || j.State != quick.StateReady {
		t.Errorf("after requeue: job %s is %v (%v), want ready", target, j.State, err)
	}

	// Cron: the chain is healthy.
	do("cron", chromedp.Navigate(base+"/cron"), visible(`#schedules`))
	if chain := text(`#schedules tr[data-name="tick"] td:last-child`); !strings.Contains(chain, "healthy") {
		t.Errorf("cron: chain %q, want healthy", chain)
	}
	shoot(t, ctx, dir, "cron")

	// Workers: one row for this process, whose three workers run the 3
	// imports; worker-1's own row below links them.
	do("workers", chromedp.Navigate(base+"/workers"), visible(`#workers-table`))
	procs, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => { const r = [...document.querySelectorAll('#processes tbody tr')];
		return r.length ? r.map(e => e.querySelector('td[data-k="workers"]').textContent + "/" + e.querySelector('td[data-k="running"]').textContent) : null })()`))
	if err != nil {
		t.Fatalf("read the processes: %v", err)
	}
	if len(procs) != 1 || procs[0] != "3/3" {
		t.Errorf("workers page: processes %v, want one with 3 workers running 3 jobs", procs)
	}
	until("each worker's row", `document.querySelectorAll('#workers-table tr[data-worker]').length === 3`)
	rows, running := count(`#workers-table tr[data-worker="worker-1"]`), count(`#workers-table tr[data-worker="worker-1"] td:last-child a`)
	if rows != 1 || running != 3 {
		t.Errorf("workers: %d rows for worker-1 (want 1), %d running jobs linked (want 3)", rows, running)
	}
	shoot(t, ctx, dir, "workers")
}

// TestBrowserReadOnly: a read-only console offers no action a person could
// press.
func TestBrowserReadOnly(t *testing.T) {
	if testing.Short() && os.Getenv("QUICKFDB_REQUIRE_BROWSER") != "1" {
		t.Skip("browser test skipped in -short mode")
	}
	ctx := browser(t)
	lq := startLiveQueue(t)
	h, err := ui.New(ui.Config{Queue: lq.q, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	base := serve(t, h)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, p := range []string{"/", "/jobs?type=report&state=scheduled", "/dead?type=webhook", "/retries", "/jobs/" + lq.dead[0].String(), "/cron"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[method="post"]').length`))
		if err != nil {
			t.Fatal(err)
		}
		if forms != 0 {
			t.Errorf("read-only %s: %d action forms", p, forms)
		}
	}
}
