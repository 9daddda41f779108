package ui_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

// fillTenants: tenant acme has 6 ready emails, solo 1, later one due in an
// hour; acme's zone spreads new jobs over 4 lanes.
func (f *fixture) fillTenants() {
	f.t.Helper()
	if err := f.q.SetZoneLanes(f.ctx, "email", "acme", 4); err != nil {
		f.t.Fatal(err)
	}
	var jobs []quick.NewJob
	for range 6 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "acme", Payload: []byte("hello")})
	}
	if _, err := f.q.Enqueue(f.ctx, jobs...); err != nil {
		f.t.Fatal(err)
	}
	f.clk.Advance(time.Second)
	if _, err := f.q.Enqueue(f.ctx, quick.NewJob{TaskType: "email", ItemSpace: "solo"},
		quick.NewJob{TaskType: "email", ItemSpace: "later", Delay: time.Hour}); err != nil {
		f.t.Fatal(err)
	}
	f.clk.Advance(time.Second)
}

var tenantRowRE = regexp.MustCompile(`(?s)<tr data-tenant="(\w*)">.*?data-k="ready">(\d+)</td>.*?data-k="scheduled">(\d+)</td>.*?data-k="lanes">(\d+)</td>`)

func TestTenantsPageRanksTenantsByReadyWork(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.fillTenants()
	r := f.get("/tenants?type=email")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	rows := tenantRowRE.FindAllStringSubmatch(r.body, -1)
	// acme's 6 jobs sit in 1 to 4 of its zone's lanes (as their IDs hash).
	if len(rows) != 3 || rows[0][1] != "acme" || rows[0][2] != "6" || rows[0][4] < "1" || rows[0][4] > "4" ||
		rows[1][1] != "solo" || rows[1][2] != "1" || rows[2][1] != "later" || rows[2][3] != "1" {
		t.Fatalf("tenant rows %v in\n%s", rows, r.body)
	}
	if !strings.Contains(r.body, `href="/zone?tenant=acme&amp;type=email"`) {
		t.Errorf("no link to acme's zone:\n%s", r.body)
	}
	// Every type: one section each.
	if r := f.get("/tenants"); r.status != 200 || strings.Count(r.body, `class="strip-box" data-type=`) != 1 {
		t.Errorf("tenants of every type: %d\n%s", r.status, r.body)
	}
	if r := f.get("/tenants?type=nope"); r.status != http.StatusNotFound || !strings.Contains(r.body, "unknown task type") {
		t.Errorf("unknown type: %d", r.status)
	}
	// The old lanes page leads here.
	if r := f.get("/lanes"); r.status != http.StatusMovedPermanently || r.loc != "/tenants" {
		t.Errorf("/lanes: %d %q", r.status, r.loc)
	}
}

func TestTenantsPageSaysWhenTheBudgetEnds(t *testing.T) {
	f := newFixture(t, ui.Config{Budget: 3})
	f.fillTenants()
	if r := f.get("/tenants?type=email"); !strings.Contains(r.body, "More tenants were not counted") {
		t.Errorf("a budget cut is not said:\n%s", r.body)
	}
}

var cellRE = regexp.MustCompile(`<a class="cell lvl-(\d)[^"]*" href="[^"]*" data-lane="(\d+)"`)

func TestZonePageShowsTheZonesLanes(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.fillTenants()
	r := f.get("/zone?type=email&tenant=acme")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	cells := cellRE.FindAllStringSubmatch(r.body, -1)
	if len(cells) != 4 || !strings.Contains(r.body, `<span id="zone-lanes">4</span> lanes for new jobs`) || !strings.Contains(r.body, "ready 6 ") {
		t.Fatalf("acme's zone: %d cells\n%s", len(cells), r.body)
	}
	// Which lanes the 6 jobs fill depends on their random IDs: at least one.
	used := 0
	for _, c := range cells {
		if c[1] != "0" {
			used++
		}
	}
	if used < 1 {
		t.Errorf("6 jobs over 4 lanes fill no lane")
	}
	if !strings.Contains(r.body, `href="/jobs?tenant=acme&amp;type=email"`) {
		t.Errorf("no link to the zone's jobs")
	}
	// A zone with one delayed job; the no-tenant zone of a type; a zone
	// that holds nothing.
	if r := f.get("/zone?type=email&tenant=later"); !strings.Contains(r.body, "scheduled 1") || len(cellRE.FindAllString(r.body, -1)) != 1 {
		t.Errorf("later's zone:\n%s", r.body)
	}
	if r := f.get("/zone?type=email&tenant=nobody"); r.status != 200 || !strings.Contains(r.body, "No lane of this zone holds jobs") {
		t.Errorf("an empty zone: %d\n%s", r.status, r.body)
	}
	if r := f.get("/zone?type=nope"); r.status != http.StatusNotFound {
		t.Errorf("unknown type: %d", r.status)
	}
}

func TestTenantsAndZoneOfAnEmptyQueue(t *testing.T) {
	f := newFixture(t, ui.Config{})
	for _, p := range []string{"/tenants", "/zone"} {
		if r := f.get(p); r.status != 200 || !strings.Contains(r.body, "No task types yet") {
			t.Fatalf("empty %s: %d\n%s", p, r.status, r.body)
		}
	}
}
