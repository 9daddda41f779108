package ui_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

// rowIDs returns the data-id of each row of the table with id table, in
// page order, with each row's data-at (ms).
func rowIDs(t *testing.T, body, table string) (ids []string, at []int64) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<table class="grid" id="` + table + `">(.*?)</table>`).FindStringSubmatch(body)
	if m == nil {
		return nil, nil
	}
	for _, r := range regexp.MustCompile(`<tr data-id="([^"]+)"(?: data-at="(-?[0-9]+)")?`).FindAllStringSubmatch(m[1], -1) {
		ids = append(ids, r[1])
		n, _ := strconv.ParseInt(r[2], 10, 64)
		at = append(at, n)
	}
	return ids, at
}

// nextURL is the page's "Next page" link, unescaped ("" when none).
func nextURL(body string) string {
	m := regexp.MustCompile(`<a class="btn" href="([^"]+)">Next page`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestDeadOpensWhereTheyAre: without type= the dead-letter page opens on a
// type that has dead letters, after a summary of every type's count; a
// type without any says the others have some.
func TestDeadOpensWhereTheyAre(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed() // email (first by name): no dead letters; webhook: 4
	body := f.get("/dead").body
	if ids, _ := rowIDs(t, body, "dead"); len(ids) != 4 {
		t.Fatalf("/dead: %d dead letters listed, want webhook's 4:\n%s", len(ids), body)
	}
	if strings.Contains(body, "No dead letters") {
		t.Errorf("/dead says none while webhook has 4")
	}
	for typ, n := range map[string]int{"webhook": 4, "email": 0} {
		if !strings.Contains(body, fmt.Sprintf(`data-type="%s" data-count="%d"`, typ, n)) {
			t.Errorf("/dead summary lacks %s with %d:\n%s", typ, n, body)
		}
	}
	body = f.get("/dead?type=email").body
	if !strings.Contains(body, "No email dead letters; other task types have 4") {
		t.Errorf("/dead?type=email does not point to the others:\n%s", body)
	}
	// An empty queue of dead letters says so plainly.
	g := newFixture(t, ui.Config{})
	if _, err := g.q.Enqueue(g.ctx, quick.NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	if body := g.get("/dead").body; !strings.Contains(body, "No dead letters.") {
		t.Errorf("no dead letters anywhere: %s", body)
	}
}

// TestUnknownTypeIs404 on every page that takes a type.
func TestUnknownTypeIs404(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	for _, p := range []string{"/jobs?type=nope", "/dead?type=nope", "/retries?type=nope", "/tenants?type=nope", "/zone?type=nope"} {
		if r := f.get(p); r.status != http.StatusNotFound || !strings.Contains(r.body, "unknown task type") {
			t.Errorf("GET %s = %d, want 404 saying unknown task type", p, r.status)
		}
	}
}

// failOnce runs n jobs of taskType with MaxAttempts 3 to a first failure:
// each then waits for its retry.
func (f *fixture) failOnce(taskType string, n int) []quick.ID {
	f.t.Helper()
	var jobs []quick.NewJob
	for i := range n {
		jobs = append(jobs, quick.NewJob{TaskType: taskType, MaxAttempts: 3, ItemSpace: "acme", Payload: fmt.Appendf(nil, `{"sync": %d}`, i)})
	}
	if _, err := f.q.Enqueue(f.ctx, jobs...); err != nil {
		f.t.Fatal(err)
	}
	var ids []quick.ID
	for i := range n {
		l := claim(f.t, f.q, quick.ClaimOptions{TaskType: taskType, Holder: "w", Max: 1, Lease: time.Minute})[0]
		if err := f.q.Fail(f.ctx, l, fmt.Sprintf("upstream 503 #%d", i)); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, l.ID) // the clock stands still: the retries stay scheduled
	}
	return ids
}

// TestRetriesView: the retries page lists the jobs waiting for their next
// attempt, soonest first, with their last error and args, and not the
// scheduled jobs that never ran; without type= it finds the type that has
// some.
func TestRetriesView(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	retries := f.failOnce("sync", 3)
	if _, err := f.q.Enqueue(f.ctx, quick.NewJob{TaskType: "sync", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/retries?type=sync", "/retries"} {
		body := f.get(p).body
		ids, at := rowIDs(t, body, "retries")
		if len(ids) != 3 {
			t.Fatalf("%s: %d rows, want the 3 retries:\n%s", p, len(ids), body)
		}
		for _, id := range retries {
			if !strings.Contains(body, `data-id="`+id.String()+`"`) {
				t.Errorf("%s lacks retry %s", p, id)
			}
		}
		for i := 1; i < len(at); i++ {
			if at[i] < at[i-1] {
				t.Errorf("%s: not soonest first: %v", p, at)
			}
		}
		for i := range 3 {
			if !strings.Contains(body, fmt.Sprintf("upstream 503 #%d", i)) {
				t.Errorf("%s lacks the last error #%d", p, i)
			}
		}
		if !strings.Contains(body, `{&#34;sync&#34;: 0}`) {
			t.Errorf("%s lacks the args:\n%s", p, body)
		}
	}
	// A retry's own page says it waits to retry.
	if body := f.get("/jobs/" + retries[0].String()).body; !strings.Contains(body, "waiting to retry: its next attempt runs at") {
		t.Errorf("a retry's page does not say so:\n%s", body)
	}
	if body := f.get("/retries?type=email").body; !strings.Contains(body, "No email job waits for a retry") {
		t.Errorf("email has no retries:\n%s", body)
	}
}

// TestJobsByTime: the jobs list is in time order across lanes and
// tenants, and its pages, limit by limit, visit every job once.
func TestJobsByTime(t *testing.T) {
	f := newFixture(t, ui.Config{})
	if err := f.q.SetZoneLanes(f.ctx, "report", "acme", 4); err != nil {
		t.Fatal(err)
	}
	var jobs []quick.NewJob
	// Delays that go down as the jobs go in, over tenants and lanes: key
	// order and time order differ.
	for i := range 23 {
		tenant := []string{"acme", "globex", "initech"}[i%3]
		jobs = append(jobs, quick.NewJob{TaskType: "report", ItemSpace: tenant, Delay: time.Duration(100-i) * time.Minute, Payload: fmt.Appendf(nil, "report %d for %s", i, tenant)})
	}
	if _, err := f.q.Enqueue(f.ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var all []int64
	next := "/jobs?type=report&limit=5"
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		body := f.get(next).body
		ids, at := rowIDs(t, body, "jobs")
		for _, id := range ids {
			if seen[id] {
				t.Errorf("job %s listed twice", id)
			}
			seen[id] = true
		}
		all = append(all, at...)
		if len(ids) > 0 && !strings.Contains(body, `data-k="args">report `) {
			t.Errorf("no args column:\n%s", body)
		}
		next = nextURL(body)
	}
	if len(seen) != 23 {
		t.Errorf("pages listed %d jobs, want 23", len(seen))
	}
	for i := 1; i < len(all); i++ {
		if all[i] < all[i-1] {
			t.Fatalf("not in time order: %v", all)
		}
	}
	body := f.get("/jobs?type=report&limit=50").body
	if !strings.Contains(body, "runs in 1h17m") && !strings.Contains(body, "runs in 1h18m") {
		t.Errorf("the soonest report's time is not in words:\n%s", body)
	}
}

// TestOperatorWords: job pages and lists say "ready since", "runs",
// "lease ends", never "vest" nor a raw key.
func TestOperatorWords(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	ready, err := f.q.List(f.ctx, quick.ListOptions{TaskType: "email", State: quick.StateReady, Limit: 1})
	if err != nil || len(ready.Jobs) != 1 {
		t.Fatal(ready, err)
	}
	for _, p := range []string{"/jobs?type=email", "/jobs?type=email&state=ready", "/jobs/" + ready.Jobs[0].ID.String(), "/jobs/" + f.dead[0].String(), "/zone?type=email&tenant=acme"} {
		body := f.get(p).body
		for _, bad := range []string{"vest", `S(1,`, `S (1`, `S(2,`} {
			if strings.Contains(strings.ToLower(body), strings.ToLower(bad)) {
				t.Errorf("%s says %q", p, bad)
			}
		}
	}
	if body := f.get("/jobs?type=email&state=ready").body; !strings.Contains(body, "ready since") {
		t.Errorf("the ready jobs do not say since when:\n%s", body)
	}
	if body := f.get("/jobs/" + ready.Jobs[0].ID.String()).body; !strings.Contains(body, "ready since") {
		t.Errorf("a ready job's page does not say since when:\n%s", body)
	}
}

// TestPausedMarkAndLiveEverywhere: a paused type is marked on each of its
// pages, and every page of live numbers refreshes.
func TestPausedMarkAndLiveEverywhere(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	if err := f.q.Pause(f.ctx, "webhook"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/jobs?type=webhook", "/jobs?type=webhook&state=dead", "/dead?type=webhook", "/retries?type=webhook", "/jobs/" + f.dead[0].String(),
		"/tenants?type=webhook", "/zone?type=webhook&tenant="} {
		body := f.get(p).body
		if !strings.Contains(body, `paused-mark`) {
			t.Errorf("%s: no paused mark", p)
		}
		if !strings.Contains(body, `data-refresh="2000"`) {
			t.Errorf("%s: no live refresh", p)
		}
	}
	for _, p := range []string{"/jobs?type=email", "/dead?type=email", "/retries?type=email", "/tenants?type=email", "/zone?type=email&tenant=acme"} {
		if body := f.get(p).body; strings.Contains(body, `paused-mark`) {
			t.Errorf("%s: marked paused, email is not", p)
		}
	}
}
