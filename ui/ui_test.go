package ui_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := ui.New(ui.Config{}); !errors.Is(err, ui.ErrConfig) {
		t.Fatalf("no queue: err %v, want ErrConfig", err)
	}
	f := newFixture(t, ui.Config{})
	for _, p := range []string{"queue", "/queue/"} {
		if _, err := ui.New(ui.Config{Queue: f.q, Prefix: p}); !errors.Is(err, ui.ErrConfig) {
			t.Errorf("Prefix %q: err %v, want ErrConfig", p, err)
		}
	}
}

func TestPagesServe(t *testing.T) {
	f := newFixture(t, ui.Config{})
	// An empty queue first: every page says so, none fails.
	for _, p := range []string{"/", "/tenants", "/zone", "/jobs", "/dead", "/cron", "/workers"} {
		if r := f.get(p); r.status != http.StatusOK {
			t.Errorf("empty queue: GET %s = %d: %s", p, r.status, r.body)
		}
	}
	f.seed()
	for _, p := range []string{"/", "/tenants", "/tenants?type=email", "/zone?type=email&tenant=acme", "/zone?type=webhook&tenant=",
		"/jobs", "/jobs?type=email&tenant=acme", "/jobs?type=webhook&notenant=1", "/jobs?type=email&state=ready", "/jobs?type=email&state=scheduled",
		"/jobs?type=email&state=leased", "/jobs?type=webhook&state=dead", "/dead", "/dead?type=webhook", "/cron", "/workers",
		"/jobs/" + f.dead[0].String(), "/static/style.css", "/static/app.js"} {
		if r := f.get(p); r.status != http.StatusOK {
			t.Errorf("GET %s = %d: %s", p, r.status, r.body)
		}
	}
}

// TestOverviewCountsMatchLibrary: the overview shows what Depth says, for
// a queue of several tenants.
func TestOverviewCountsMatchLibrary(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	body := f.get("/").body
	for _, typ := range []string{"email", "webhook"} {
		d, err := f.q.Depth(f.ctx, quick.DepthOptions{TaskType: typ})
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]int{"ready": d.Ready, "leased": d.Leased, "scheduled": d.Scheduled, "dead": int(d.Dead)} {
			if got := cell(t, body, typ, k); got != want {
				t.Errorf("%s %s: page shows %d, library says %d", typ, k, got, want)
			}
		}
	}
	// The seed's numbers, so the comparison above is not vacuous.
	if cell(t, body, "email", "ready") != 9 || cell(t, body, "email", "leased") != 3 ||
		cell(t, body, "email", "scheduled") != 5 || cell(t, body, "webhook", "dead") != 4 {
		t.Errorf("seeded counts not shown:\n%s", body)
	}
	// The top tenants link to their zones.
	if !strings.Contains(body, `href="/zone?tenant=acme&amp;type=email"`) {
		t.Errorf("no link to acme's zone:\n%s", body)
	}
}

func TestJobFilters(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	page, err := f.q.List(f.ctx, quick.ListOptions{TaskType: "email", State: quick.StateLeased})
	if err != nil {
		t.Fatal(err)
	}
	body := f.get("/jobs?type=email&state=leased").body
	if got := strings.Count(body, `<tr data-id=`); got != len(page.Jobs) || got != 3 {
		t.Errorf("leased: %d rows, library lists %d", got, len(page.Jobs))
	}
	// By unique key: UniqueHolder finds the job.
	id, err := f.q.UniqueHolder(f.ctx, "email", "later-2")
	if err != nil {
		t.Fatal(err)
	}
	body = f.get("/jobs?type=email&unique=later-2").body
	if strings.Count(body, `<tr data-id=`) != 1 || !strings.Contains(body, `data-id="`+id.String()+`"`) {
		t.Errorf("unique key later-2: want the one job %s:\n%s", id, body)
	}
	if body = f.get("/jobs?type=email&unique=nobody").body; !strings.Contains(body, "no pending or running email job holds") {
		t.Errorf("free unique key: no note:\n%s", body)
	}
	// By ID: a redirect to the job's page, which says where its key is.
	r := f.get("/jobs?id=" + id.String())
	if r.status != http.StatusSeeOther || r.loc != "/jobs/"+id.String() {
		t.Fatalf("by ID: %d %q", r.status, r.loc)
	}
	body = f.get(r.loc).body
	if !strings.Contains(body, "scheduled") || !strings.Contains(body, "of later&#39;s zone") || !strings.Contains(body, `href="/zone?tenant=later&amp;type=email"`) {
		t.Errorf("job page lacks state or zone:\n%s", body)
	}
	// By tenant: acme's ready jobs only.
	body = f.get("/jobs?type=email&state=ready&tenant=globex").body
	if n := strings.Count(body, `<tr data-id=`); n == 0 || n != strings.Count(body, "<td>globex</td>") {
		t.Errorf("tenant globex: %d rows, not all globex's:\n%s", n, body)
	}
	// Paging: limit 4 over 9 ready jobs gives a next link that continues.
	body = f.get("/jobs?type=email&state=ready&limit=4").body
	if strings.Count(body, `<tr data-id=`) != 4 || !strings.Contains(body, "skip=4") {
		t.Errorf("page of 4: want 4 rows and a next link:\n%s", body)
	}
}

func TestBadInputIs4xx(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	for _, c := range []struct {
		path string
		want int
	}{
		{"/jobs/not-an-id", 400},
		{"/jobs/" + quick.NewID(epoch).String(), 404},
		{"/jobs?id=xyz", 400},
		{"/jobs?type=email&state=bogus", 400},
		{"/jobs?type=email&state=finished", 400},
		{"/jobs?type=email&limit=0", 400},
		{"/jobs?type=email&limit=100000", 400},
		{"/jobs?type=email&after=zz", 400},
		{"/jobs?type=" + strings.Repeat("x", 200), 400},
		{"/dead?limit=-3", 400},
		{"/dead?type=webhook&after=%00", 400},
		{"/nowhere", 404},
	} {
		if r := f.get(c.path); r.status != c.want {
			t.Errorf("GET %s = %d, want %d: %s", c.path, r.status, c.want, r.body)
		}
	}
	for _, c := range []struct {
		action string
		form   url.Values
		want   int
	}{
		{"bogus", url.Values{}, 404},
		{"requeue", url.Values{}, 400},
		{"requeue", url.Values{"id": {"nope"}}, 400},
		{"cancel", url.Values{"id": {"01"}}, 400},
		{"requeue-dead", url.Values{}, 400},
		{"requeue-dead", url.Values{"type": {"webhook"}, "limit": {"0"}}, 400},
		{"purge-dead", url.Values{"type": {"webhook"}, "older": {"-1h"}}, 400},
		{"purge-dead", url.Values{"type": {"webhook"}, "older": {"soon"}}, 400},
		{"purge-dead", url.Values{"type": {"webhook"}, "keep": {"x"}}, 400},
		{"pause", url.Values{}, 400},
		{"resume", url.Values{"type": {strings.Repeat("x", quick.MaxTaskTypeLen+1)}}, 400},
		{"run-now", url.Values{"id": {"x"}}, 400},
		{"cancel-matching", url.Values{"type": {"email"}, "state": {"dead"}}, 400},
		{"cancel-matching", url.Values{"type": {"email"}, "state": {"soon"}}, 400},
		{"cancel-matching", url.Values{"type": {"email"}, "limit": {"100000"}}, 400},
		{"requeue-dead", url.Values{"type": {"webhook"}, "within": {"-1h"}}, 400},
		// Confirmed, on a job that is not dead: the library refuses, the
		// page says so.
		{"requeue", url.Values{"id": {quick.NewID(epoch).String()}, "confirm": {"yes"}}, 303},
	} {
		if r := f.post("/actions/"+c.action, c.form); r.status != c.want {
			t.Errorf("POST %s %v = %d, want %d: %s", c.action, c.form, r.status, c.want, r.body)
		}
	}
	r := f.post("/actions/requeue", url.Values{"id": {quick.NewID(epoch).String()}, "confirm": {"yes"}, "back": {"/dead"}})
	if !strings.Contains(r.loc, "failed=") {
		t.Errorf("a refused action redirects with the error: %q", r.loc)
	}
	if r := f.get("/jobs?type=email"); r.status != 200 {
		t.Fatalf("the console still serves after bad input: %d", r.status)
	}
}

// TestActionAsksFirst: an action without confirm=yes changes nothing and
// shows a confirmation page; with it, the library call runs.
func TestActionAsksFirst(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	id := f.dead[0]
	r := f.post("/actions/requeue", url.Values{"id": {id.String()}, "back": {"/dead?type=webhook"}})
	if r.status != 200 || !strings.Contains(r.body, `name="confirm" value="yes"`) || !strings.Contains(r.body, "quick.Queue.Requeue") {
		t.Fatalf("unconfirmed: %d, want the confirmation page:\n%s", r.status, r.body)
	}
	if st := f.state(id); st != quick.StateDead {
		t.Fatalf("unconfirmed requeue changed the job: %v", st)
	}
	r = f.post("/actions/requeue", url.Values{"id": {id.String()}, "back": {"/dead?type=webhook"}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.loc, "/dead?") || !strings.Contains(r.loc, "done=") {
		t.Fatalf("confirmed: %d %q", r.status, r.loc)
	}
	if st := f.state(id); st != quick.StateReady {
		t.Fatalf("after requeue: %v, want ready", st)
	}
	// Cancel a dead letter: it is gone.
	r = f.post("/actions/cancel", url.Values{"id": {f.dead[1].String()}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if st := f.state(f.dead[1]); st != quick.StateFinished {
		t.Fatalf("after cancel: %v, want finished", st)
	}
	// An open redirect is not possible.
	r = f.post("/actions/cancel", url.Values{"id": {f.dead[2].String()}, "confirm": {"yes"}, "back": {"//evil.example/x"}})
	if !strings.HasPrefix(r.loc, "/?") {
		t.Errorf("back=//evil.example: redirected to %q", r.loc)
	}
}

func TestBulkDeadActions(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	// Requeue the dead letters whose error says "timeout": 2 of 4.
	r := f.post("/actions/requeue-dead", url.Values{"type": {"webhook"}, "error": {"timeout"}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("requeue-dead: %d %s", r.status, r.body)
	}
	if n, _ := f.q.DeadCount(f.ctx, "webhook"); n != 2 {
		t.Fatalf("after requeuing the timeouts: %d dead, want 2", n)
	}
	for i, id := range f.dead {
		want := quick.StateDead
		if i%2 == 1 {
			want = quick.StateReady
		}
		if st := f.state(id); st != want {
			t.Errorf("dead[%d]: %v, want %v", i, st, want)
		}
	}
	// Purge keeping the newest 1, then all.
	f.post("/actions/purge-dead", url.Values{"type": {"webhook"}, "keep": {"1"}, "confirm": {"yes"}})
	if n, _ := f.q.DeadCount(f.ctx, "webhook"); n != 1 {
		t.Fatalf("purge keeping 1: %d left", n)
	}
	if st := f.state(f.dead[2]); st != quick.StateDead {
		t.Errorf("the newest dead letter was purged: %v", st)
	}
	f.post("/actions/purge-dead", url.Values{"type": {"webhook"}, "confirm": {"yes"}})
	if n, _ := f.q.DeadCount(f.ctx, "webhook"); n != 0 {
		t.Fatalf("purge all: %d left", n)
	}
}

func TestReadOnlyRefusesActions(t *testing.T) {
	f := newFixture(t, ui.Config{ReadOnly: true})
	f.seed()
	for _, p := range []string{"/", "/jobs?type=email", "/dead?type=webhook", "/jobs/" + f.dead[0].String(), "/cron"} {
		body := f.get(p).body
		if strings.Contains(body, "/actions/") {
			t.Errorf("read-only %s offers actions", p)
		}
		if !strings.Contains(body, "read-only") {
			t.Errorf("read-only %s does not say so", p)
		}
	}
	for _, a := range []string{"requeue", "cancel", "purge-dead", "cron-repair", "pause", "resume", "run-now", "cancel-matching", "requeue-dead"} {
		r := f.post("/actions/"+a, url.Values{"id": {f.dead[0].String()}, "type": {"webhook"}, "confirm": {"yes"}})
		if r.status != http.StatusForbidden {
			t.Errorf("read-only POST %s = %d, want 403", a, r.status)
		}
	}
	if st := f.state(f.dead[0]); st != quick.StateDead {
		t.Fatalf("read-only console changed a job: %v", st)
	}
	if p, err := f.q.PausedTypes(f.ctx); err != nil || len(p) != 0 {
		t.Fatalf("read-only console paused: %v %v", p, err)
	}
	if n, _ := f.q.DeadCount(f.ctx, "webhook"); n != 4 {
		t.Fatalf("read-only console requeued: %d dead left, want 4", n)
	}
}

func TestCrossOriginPostRefused(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	req, _ := http.NewRequest("POST", f.srv.URL+"/actions/cancel", strings.NewReader("confirm=yes&id="+f.dead[0].String()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := f.do(req); r.status != http.StatusForbidden {
		t.Fatalf("cross-site POST = %d, want 403", r.status)
	}
	if st := f.state(f.dead[0]); st != quick.StateDead {
		t.Fatalf("cross-site POST changed a job: %v", st)
	}
}

func TestCronPageAndRepair(t *testing.T) {
	f := newFixture(t, ui.Config{})
	if err := cron.Register(f.ctx, f.q, cron.Schedule{Name: "nightly", Spec: "0 3 * * *", TaskType: "report"}); err != nil {
		t.Fatal(err)
	}
	body := f.get("/cron").body
	if !strings.Contains(body, "healthy") || !strings.Contains(body, "2030-01-02 03:00:00.000Z") || !strings.Contains(body, "2030-01-04 03:00:00.000Z") {
		t.Fatalf("cron page: want a healthy chain and its next runs:\n%s", body)
	}
	// Break the chain: cancel its pending occurrence.
	es, err := cron.List(f.ctx, f.q)
	if err != nil || len(es) != 1 {
		t.Fatal(es, err)
	}
	if err := f.q.Cancel(f.ctx, es[0].NextID); err != nil {
		t.Fatal(err)
	}
	if body = f.get("/cron").body; !strings.Contains(body, "broken") {
		t.Fatalf("a cancelled occurrence: chain not shown broken:\n%s", body)
	}
	r := f.post("/actions/cron-repair", url.Values{"confirm": {"yes"}, "back": {"/cron"}})
	if r.status != http.StatusSeeOther || !strings.Contains(r.loc, "restored+1") {
		t.Fatalf("repair: %d %q", r.status, r.loc)
	}
	if es, _ = cron.List(f.ctx, f.q); !es[0].Alive {
		t.Fatal("repair did not restore the chain")
	}
}

func TestPrefixMount(t *testing.T) {
	f := newFixture(t, ui.Config{Prefix: "/queue"})
	f.seed()
	r := f.get("/queue/")
	if r.status != 200 || !strings.Contains(r.body, `href="/queue/jobs?type=email"`) || !strings.Contains(r.body, `/queue/static/style.css`) {
		t.Fatalf("GET /queue/ = %d; links must carry the prefix:\n%s", r.status, r.body)
	}
	// Called directly (mounted without a mux), paths outside the prefix are
	// not the console's.
	for _, p := range []string{"/queuex", "/other/"} {
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s outside the prefix = %d, want 404", p, w.Code)
		}
	}
	if r := f.get("/queue/static/app.js"); r.status != 200 {
		t.Errorf("asset under prefix: %d", r.status)
	}
	r = f.post("/queue/actions/requeue", url.Values{"id": {f.dead[0].String()}, "confirm": {"yes"}, "back": {"/dead"}})
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.loc, "/queue/dead?") {
		t.Fatalf("action under prefix: %d %q", r.status, r.loc)
	}
}

// chartCard is the overview's depth chart card of taskType.
func chartCard(t *testing.T, body, taskType string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<div class="card" data-chart="` + regexp.QuoteMeta(taskType) + `">(.*?)</div>\s*</div>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no chart of %s:\n%s", taskType, body)
	}
	return m[1]
}

// TestHistorySamples: Sample records the library's counts; the overview
// draws them; the ring keeps one hour.
func TestHistorySamples(t *testing.T) {
	f := newFixture(t, ui.Config{SampleEvery: time.Minute})
	f.seed()
	for range 90 {
		if err := f.h.Sample(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute)
	}
	body := f.get("/").body
	if card := chartCard(t, body, "email"); !strings.Contains(card, "<polyline") || !strings.Contains(card, "-1h00m") {
		t.Fatalf("after samples: want a chart over one hour, whatever was sampled before:\n%s", card)
	}
}

// TestOverviewOneSnapshot: a type's chart ends with the page's own counts,
// so its legend says what the table says, though the queue changed since
// the last sample.
func TestOverviewOneSnapshot(t *testing.T) {
	f := newFixture(t, ui.Config{SampleEvery: time.Minute})
	f.seed()
	if err := f.h.Sample(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Second)
	var more []quick.NewJob
	for range 21 {
		more = append(more, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	if _, err := f.q.Enqueue(f.ctx, more...); err != nil {
		t.Fatal(err)
	}
	body := f.get("/").body
	card := chartCard(t, body, "email")
	for _, k := range []string{"ready", "leased", "scheduled", "dead"} {
		m := regexp.MustCompile(`<span class="s-[a-z]+">` + k + ` ([0-9]+)</span>`).FindStringSubmatch(card)
		if m == nil {
			t.Fatalf("no %s in the legend:\n%s", k, card)
		}
		if n, _ := strconv.Atoi(m[1]); n != cell(t, body, "email", k) {
			t.Errorf("email %s: legend %d, table %d", k, n, cell(t, body, "email", k))
		}
	}
	if cell(t, body, "email", "ready") != 30 {
		t.Errorf("the table does not show the new jobs: %d ready", cell(t, body, "email", "ready"))
	}
}
