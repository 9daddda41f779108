package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// zonesQueue opens the CLI's default queue.
func (h *harness) zonesQueue() *quick.Queue {
	h.t.Helper()
	q, err := quick.Open(context.Background(), h.db, tuple.FromTuple(tuple.Tuple{"quick"}), quick.Options{
		Clock: h.clk,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return q
}

// placeZone puts a job into its zone by hand (the zones enqueue is built on
// another branch; at merge this can become q.Enqueue).
func (h *harness) placeZone(q *quick.Queue, j quick.NewJob) quick.ID {
	h.t.Helper()
	place := testhook.PlaceZone.(func(context.Context, *quick.Queue, quick.NewJob) (quick.ID, error))
	id, err := place(context.Background(), q, j)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

// fillZones: tenant acme has 5 ready jobs, tenant solo 1, tenant later one
// due in an hour; "sms" is not Trackable.
func fillZones(h *harness) (acme, later, untracked quick.ID) {
	q := h.zonesQueue()
	for range 5 {
		acme = h.placeZone(q, quick.NewJob{TaskType: "email", ItemSpace: "acme", Payload: []byte("hello")})
	}
	h.clk.Advance(time.Second)
	h.placeZone(q, quick.NewJob{TaskType: "email", ItemSpace: "solo"})
	later = h.placeZone(q, quick.NewJob{TaskType: "email", ItemSpace: "later", Delay: time.Hour})
	untracked = h.placeZone(q, quick.NewJob{TaskType: "sms", ItemSpace: "acme"})
	h.clk.Advance(time.Second)
	return acme, later, untracked
}

func TestZonesShowsThePointerIndex(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("zones", "--type", "email")
	for _, want := range []string{"email  pointer index", "acme", "solo", "later", "in 59m"} {
		if !strings.Contains(out, want) {
			t.Errorf("quick zones: no %q in\n%s", want, out)
		}
	}
	// Entries come in the order workers find them: acme vested first.
	if strings.Index(out, "acme") > strings.Index(out, "solo") || strings.Index(out, "solo") > strings.Index(out, "later") {
		t.Errorf("pointer order:\n%s", out)
	}
	// Paging: one entry per page, following the printed cursor.
	var seen []string
	args := []string{"zones", "--type", "email", "--limit", "1"}
	more := regexp.MustCompile(`--after (\S+)`)
	for range 5 {
		out := h.ok(args...)
		for _, t := range []string{"acme", "solo", "later"} {
			if strings.Contains(out, t) {
				seen = append(seen, t)
			}
		}
		m := more.FindStringSubmatch(out)
		if m == nil {
			break
		}
		args = []string{"zones", "--type", "email", "--limit", "1", "--after", m[1]}
	}
	if strings.Join(seen, ",") != "acme,solo,later" {
		t.Fatalf("pages showed %v", seen)
	}
	h.fails("invalid --after", "zones", "--type", "sms", "--after", strings.TrimPrefix(more.FindString(h.ok("zones", "--type", "email", "--limit", "1")), "--after "))
}

func TestLanesShowsAZonesLanes(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("lanes", "--type", "email", "--tenant", "acme")
	for _, want := range []string{"email  tenant acme  1 lanes for new jobs  ready 5  leased 0  scheduled 0", "load █", "LANE", "cost: "} {
		if !strings.Contains(out, want) {
			t.Errorf("quick lanes --tenant acme: no %q in\n%s", want, out)
		}
	}
	// Without --tenant: the tenant with the most ready work, said so.
	if out := h.ok("lanes", "--type", "email"); !strings.Contains(out, "tenant acme") || !strings.Contains(out, "the tenant with the most ready work") {
		t.Errorf("quick lanes without --tenant:\n%s", out)
	}
	if out := h.ok("lanes", "--type", "email", "--tenant", "later", "--compact"); !strings.Contains(out, "scheduled 1") || strings.Contains(out, "LANE") {
		t.Errorf("quick lanes --compact of a zone with a delayed job:\n%s", out)
	}
	// A zone grown to 4 lanes shows 4 lanes; its jobs keep the lane they
	// were placed in until new ones spread.
	q := h.zonesQueue()
	if err := q.SetZoneLanes(context.Background(), "email", "acme", 4); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		h.placeZone(q, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	var got zoneReport
	if err := json.Unmarshal([]byte(h.ok("lanes", "--type", "email", "--tenant", "acme", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.ZoneLanes != 4 || len(got.Lanes) != 4 || got.Total.Ready != 17 || !got.Total.Exact || got.ItemSpace != "acme" {
		t.Fatalf("lanes JSON of a grown zone: %+v", got)
	}
	used := 0
	for _, l := range got.Lanes {
		if l.Ready > 0 {
			used++
		}
	}
	if used < 2 {
		t.Errorf("12 jobs after growing to 4 lanes sit in %d lane(s): %+v", used, got.Lanes)
	}
	if out := h.ok("lanes", "--type", "sms", "--tenant", "nobody"); !strings.Contains(out, "tenant nobody  1 lanes for new jobs  ready 0") {
		t.Errorf("an empty zone:\n%s", out)
	}
	h.fails("unknown task type", "lanes", "--type", "nope")
	h.fails("takes no arguments", "lanes", "--type", "email", "acme")
}

func TestTenantsRanksTenantsByReadyWork(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("tenants", "--type", "email")
	lines := strings.Split(out, "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "email  ready 6  leased 0  scheduled 1") || !strings.Contains(lines[1], "TENANT") ||
		!strings.HasPrefix(lines[2], "  acme") || !strings.Contains(lines[2], " 5 ") || !strings.HasPrefix(lines[3], "  solo") || !strings.HasPrefix(lines[4], "  later") {
		t.Fatalf("quick tenants:\n%s", out)
	}
	if out := h.ok("tenants", "--type", "email", "--limit", "1"); strings.Contains(out, "solo") {
		t.Fatalf("--limit 1 shows more:\n%s", out)
	}
	var got struct {
		Types []typeDepth `json:"types"`
	}
	if err := json.Unmarshal([]byte(h.ok("tenants", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Types) != 2 || got.Types[0].TaskType != "email" || len(got.Types[0].Tenants) != 3 || got.Types[0].Tenants[0].ItemSpace != "acme" ||
		got.Types[0].Tenants[0].Ready != 5 || !got.Types[0].Tenants[0].Exact || got.Types[1].TaskType != "sms" || got.Types[1].Tenants[0].Ready != 1 {
		t.Fatalf("tenants JSON: %+v", got.Types)
	}
	// Past the budget (at least 64 keys): acme's backlog hides the others.
	q := h.zonesQueue()
	for range 100 {
		h.placeZone(q, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	if out := h.ok("tenants", "--type", "email", "--budget", "64"); !strings.Contains(out, "≥") && !strings.Contains(out, "more tenants not read") {
		t.Fatalf("a budget cut is not said:\n%s", out)
	}
	h.fails("unknown task type", "tenants", "--type", "nope")
	h.fails("invalid --limit", "tenants", "--limit", "0")
}

func TestTenantShowsItsZone(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("tenant", "acme", "--type", "email")
	for _, want := range []string{"email  tenant acme  1 lanes", "READY", "5 jobs", "ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("quick tenant: no %q in\n%s", want, out)
		}
	}
	out = h.ok("tenant", "acme", "--type", "email", "--limit", "2")
	m := regexp.MustCompile(`--after (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no cursor printed:\n%s", out)
	}
	out = h.ok("tenant", "acme", "--type", "email", "--limit", "10", "--after", m[1])
	if !strings.Contains(out, "3 jobs") {
		t.Fatalf("second page:\n%s", out)
	}
	h.fails("invalid --after", "tenant", "solo", "--type", "email", "--after", m[1])
	h.fails("ITEM-SPACE", "tenant", "--type", "email")
}

func TestJobCommandsFindZonesJobsByID(t *testing.T) {
	h := newHarness(t)
	acme, later, untracked := fillZones(h)
	var zones []string
	out := h.ok(append([]string{"jobs", "show", acme.String()}, zones...)...)
	for _, want := range []string{"ready", "acme", "hello"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs show: no %q in\n%s", want, out)
		}
	}
	h.ok(append([]string{"jobs", "show", untracked.String()}, zones...)...)
	h.ok(append([]string{"jobs", "run-now", later.String()}, zones...)...)
	if out := h.ok(append([]string{"jobs", "show", later.String()}, zones...)...); !strings.Contains(out, "ready") {
		t.Fatalf("after run-now:\n%s", out)
	}
	h.ok(append([]string{"jobs", "cancel", acme.String(), "--yes"}, zones...)...)
	h.fails("not found", append([]string{"jobs", "show", acme.String()}, zones...)...)
}
