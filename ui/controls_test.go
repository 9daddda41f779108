package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

// confirmPage checks an unconfirmed action's answer: the confirmation page,
// naming the library operation and pointing to its documented cost.
func confirmPage(t *testing.T, r resp, op string) {
	t.Helper()
	if r.status != 200 || !strings.Contains(r.body, `name="confirm" value="yes"`) {
		t.Fatalf("unconfirmed: %d, want the confirmation page:\n%s", r.status, r.body)
	}
	if !strings.Contains(r.body, op) || !strings.Contains(r.body, "docs/design.md") {
		t.Errorf("the confirmation page does not name %s and its cost in docs/design.md:\n%s", op, r.body)
	}
}

func (f *fixture) paused() map[string]time.Time {
	f.t.Helper()
	p, err := f.q.PausedTypes(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// TestPauseResumeAction: the overview offers Pause per type; confirmed, the
// type is paused in the library and marked on the overview, which then
// offers Resume.
func TestPauseResumeAction(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	body := f.get("/").body
	if !strings.Contains(body, `action="/actions/pause"`) || strings.Contains(body, `data-paused`) {
		t.Fatalf("overview: want Pause buttons and nothing paused:\n%s", body)
	}
	form := url.Values{"type": {"email"}, "back": {"/"}}
	confirmPage(t, f.post("/actions/pause", form), "quick.Queue.Pause")
	if p := f.paused(); len(p) != 0 {
		t.Fatalf("an unconfirmed pause paused: %v", p)
	}
	form.Set("confirm", "yes")
	if r := f.post("/actions/pause", form); r.status != http.StatusSeeOther || !strings.Contains(r.loc, "done=") {
		t.Fatalf("pause: %d %q %s", r.status, r.loc, r.body)
	}
	if p := f.paused(); len(p) != 1 || !p["email"].Equal(f.clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("after pause: PausedTypes = %v, want email since now", p)
	}
	body = f.get("/").body
	if !strings.Contains(body, `<tr data-type="email" data-paused="1">`) || strings.Contains(body, `<tr data-type="webhook" data-paused`) {
		t.Errorf("overview does not mark email (alone) paused:\n%s", body)
	}
	if !strings.Contains(body, `action="/actions/resume"`) {
		t.Errorf("overview offers no Resume for the paused type")
	}
	confirmPage(t, f.post("/actions/resume", url.Values{"type": {"email"}}), "quick.Queue.Pause / Resume")
	if p := f.paused(); len(p) != 1 {
		t.Fatalf("an unconfirmed resume resumed: %v", p)
	}
	if r := f.post("/actions/resume", url.Values{"type": {"email"}, "confirm": {"yes"}}); r.status != http.StatusSeeOther {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if p := f.paused(); len(p) != 0 {
		t.Fatalf("after resume: PausedTypes = %v", p)
	}
}

// TestRunNowAction: a scheduled job's page offers Run now; confirmed, the
// job is ready; on a dead letter the library refuses and the page says so.
func TestRunNowAction(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	id, err := f.q.UniqueHolder(f.ctx, "email", "later-4")
	if err != nil {
		t.Fatal(err)
	}
	if body := f.get("/jobs/" + id.String()).body; !strings.Contains(body, `action="/actions/run-now"`) {
		t.Fatalf("a scheduled job's page offers no Run now")
	}
	if body := f.get("/jobs/" + f.dead[0].String()).body; strings.Contains(body, `action="/actions/run-now"`) {
		t.Errorf("a dead letter's page offers Run now")
	}
	form := url.Values{"id": {id.String()}, "back": {"/jobs/" + id.String()}}
	confirmPage(t, f.post("/actions/run-now", form), "quick.Queue.RunNow")
	if st := f.state(id); st != quick.StateScheduled {
		t.Fatalf("an unconfirmed run-now moved the job: %v", st)
	}
	form.Set("confirm", "yes")
	if r := f.post("/actions/run-now", form); r.status != http.StatusSeeOther || !strings.Contains(r.loc, "done=") {
		t.Fatalf("run-now: %d %q", r.status, r.loc)
	}
	j, err := f.q.Get(f.ctx, id)
	if err != nil || j.State != quick.StateReady || j.RunAt.After(f.clk.Now()) {
		t.Fatalf("after run-now: %v at %v (%v), want ready now", j.State, j.RunAt, err)
	}
	r := f.post("/actions/run-now", url.Values{"id": {f.dead[0].String()}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther || !strings.Contains(r.loc, "failed=") {
		t.Errorf("run-now of a dead letter: %d %q, want a redirect saying it failed", r.status, r.loc)
	}
	if st := f.state(f.dead[0]); st != quick.StateDead {
		t.Errorf("run-now moved a dead letter: %v", st)
	}
}

// TestCancelMatchingAction: the jobs page offers cancel by filter; it
// cancels through quick.Queue.CancelMatching what the filter selects.
func TestCancelMatchingAction(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed()
	body := f.get("/jobs?type=email&state=scheduled").body
	if !strings.Contains(body, `id="cancel-matching"`) || !strings.Contains(body, `name="state" value="scheduled"`) {
		t.Fatalf("the jobs page offers no cancel by filter for the shown state:\n%s", body)
	}
	if body := f.get("/jobs?type=webhook&state=dead").body; strings.Contains(body, `id="cancel-matching"`) {
		t.Errorf("the dead-letter listing offers cancel by filter (dead letters are purged)")
	}
	// 5 scheduled email jobs with unique keys later-0 … later-4: cancel 3.
	form := url.Values{"type": {"email"}, "state": {"scheduled"}, "unique": {"later-"}, "limit": {"3"}}
	confirmPage(t, f.post("/actions/cancel-matching", form), "quick.Queue.CancelMatching")
	// Counts as the overview shows them (TestOverviewCountsMatchLibrary
	// checks those are the library's).
	count := func(st quick.State) int {
		return cell(t, f.get("/").body, "email", st.String())
	}
	if n := count(quick.StateScheduled); n != 5 {
		t.Fatalf("an unconfirmed cancel cancelled: %d scheduled left", n)
	}
	form.Set("confirm", "yes")
	r := f.post("/actions/cancel-matching", form)
	if r.status != http.StatusSeeOther || !strings.Contains(r.loc, "cancelled+3") {
		t.Fatalf("cancel-matching: %d %q %s", r.status, r.loc, r.body)
	}
	if n := count(quick.StateScheduled); n != 2 {
		t.Errorf("after cancelling 3: %d scheduled, want 2", n)
	}
	// No state: scheduled and ready, never the leased ones.
	r = f.post("/actions/cancel-matching", url.Values{"type": {"email"}, "confirm": {"yes"}, "limit": {"1000"}})
	if r.status != http.StatusSeeOther || !strings.Contains(r.loc, "cancelled+11") {
		t.Fatalf("cancel-matching all: %d %q", r.status, r.loc)
	}
	if s, rd, l := count(quick.StateScheduled), count(quick.StateReady), count(quick.StateLeased); s != 0 || rd != 0 || l != 3 {
		t.Errorf("after cancelling scheduled and ready: %d scheduled, %d ready, %d leased; want 0, 0, 3", s, rd, l)
	}
}

// TestRequeueMatchingWithin: requeue by filter takes the dead letters that
// died within the given time, through quick.Queue.RequeueMatching.
func TestRequeueMatchingWithin(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.seed() // dead[i] died at epoch+i s; now is epoch+4 s
	form := url.Values{"type": {"webhook"}, "within": {"2500ms"}}
	confirmPage(t, f.post("/actions/requeue-dead", form), "quick.Queue.RequeueMatching")
	if n, _ := f.q.DeadCount(f.ctx, "webhook"); n != 4 {
		t.Fatalf("an unconfirmed requeue requeued: %d dead left", n)
	}
	form.Set("confirm", "yes")
	if r := f.post("/actions/requeue-dead", form); r.status != http.StatusSeeOther || !strings.Contains(r.loc, "requeued+2") {
		t.Fatalf("requeue-dead: %d %q", r.status, r.loc)
	}
	for i, id := range f.dead {
		want := quick.StateDead
		if i >= 2 {
			want = quick.StateReady
		}
		if st := f.state(id); st != want {
			t.Errorf("dead[%d]: %v, want %v", i, st, want)
		}
	}
}
