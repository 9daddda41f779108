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

// zonesQueue opens the CLI's default queue with the zones layout, "email"
// Trackable, as `--layout zones --trackable email` does.
func (h *harness) zonesQueue() *quick.Queue {
	h.t.Helper()
	q, err := quick.Open(context.Background(), h.db, tuple.FromTuple(tuple.Tuple{"quick"}), quick.Options{
		Clock:     h.clk,
		TaskTypes: map[string]quick.TaskTypeOptions{"email": {}},
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
	out := h.ok("zones", "--type", "email", "--layout", "zones")
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
	args := []string{"zones", "--type", "email", "--layout", "zones", "--limit", "1"}
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
		args = []string{"zones", "--type", "email", "--layout", "zones", "--limit", "1", "--after", m[1]}
	}
	if strings.Join(seen, ",") != "acme,solo,later" {
		t.Fatalf("pages showed %v", seen)
	}
	h.fails("invalid --after", "zones", "--type", "sms", "--layout", "zones", "--after", strings.TrimPrefix(more.FindString(h.ok("zones", "--type", "email", "--limit", "1")), "--after "))
}

func TestLanesShowsZonesWithTheZonesLayout(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("lanes", "--type", "email", "--layout", "zones")
	if !strings.Contains(out, "email  pointer index") || !strings.Contains(out, "acme") {
		t.Fatalf("quick lanes --layout zones:\n%s", out)
	}
	if out := h.ok("lanes", "--type", "email"); strings.Contains(out, "pointer index") {
		t.Fatalf("quick lanes without --layout zones shows zones:\n%s", out)
	}
	var got struct {
		Zones []pointerReport `json:"zones"`
	}
	if err := json.Unmarshal([]byte(h.ok("lanes", "--type", "email", "--layout", "zones", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Zones) != 1 || len(got.Zones[0].Pointers) != 3 || got.Zones[0].Pointers[0].ItemSpace != "acme" || !got.Zones[0].Pointers[0].Vested {
		t.Fatalf("lanes JSON zones: %+v", got.Zones)
	}
	h.fails(`invalid --layout "tiles"`, "lanes", "--layout", "tiles")
}

func TestTenantsRanksReadyWork(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("tenants", "--type", "email", "--layout", "zones")
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "acme") || !strings.Contains(lines[1], " 5 ") || !strings.HasPrefix(lines[2], "solo") {
		t.Fatalf("quick tenants:\n%s", out)
	}
	if strings.Contains(out, "later") {
		t.Fatalf("a tenant with no ready work is listed:\n%s", out)
	}
	if out := h.ok("tenants", "--type", "email", "--layout", "zones", "--cap", "2"); !strings.Contains(out, "≥2") {
		t.Fatalf("a capped count is not marked:\n%s", out)
	}
	var got struct {
		Tenants []tenantRow `json:"tenants"`
	}
	if err := json.Unmarshal([]byte(h.ok("tenants", "--type", "email", "--layout", "zones", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tenants) != 2 || got.Tenants[0].ItemSpace != "acme" || got.Tenants[0].Ready != 5 || !got.Tenants[0].Exact {
		t.Fatalf("tenants JSON: %+v", got.Tenants)
	}
	h.fails("unknown task type", "tenants", "--type", "nope", "--layout", "zones")
}

func TestTenantShowsItsZone(t *testing.T) {
	h := newHarness(t)
	fillZones(h)
	out := h.ok("tenant", "acme", "--type", "email", "--layout", "zones")
	for _, want := range []string{"email  tenant acme  1 lanes", "READY", "5 jobs", "ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("quick tenant: no %q in\n%s", want, out)
		}
	}
	out = h.ok("tenant", "acme", "--type", "email", "--layout", "zones", "--limit", "2")
	m := regexp.MustCompile(`--after (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no cursor printed:\n%s", out)
	}
	out = h.ok("tenant", "acme", "--type", "email", "--layout", "zones", "--limit", "10", "--after", m[1])
	if !strings.Contains(out, "3 jobs") {
		t.Fatalf("second page:\n%s", out)
	}
	h.fails("invalid --after", "tenant", "solo", "--type", "email", "--layout", "zones", "--after", m[1])
	h.fails("ITEM-SPACE", "tenant", "--type", "email", "--layout", "zones")
}

func TestJobCommandsFindTrackableZonesJobs(t *testing.T) {
	h := newHarness(t)
	acme, later, untracked := fillZones(h)
	zones := []string{"--layout", "zones", "--trackable", "email"}
	out := h.ok(append([]string{"jobs", "show", acme.String()}, zones...)...)
	for _, want := range []string{"ready", "acme", "hello"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs show: no %q in\n%s", want, out)
		}
	}
	// Every zones job is tracked by default (quick.TaskTypeOptions.Untracked
	// opts out): the "sms" job is found too.
	if out := h.ok(append([]string{"jobs", "show", untracked.String()}, zones...)...); !strings.Contains(out, "sms") {
		t.Errorf("jobs show of a job of another type:\n%s", out)
	}
	h.ok(append([]string{"jobs", "run-now", later.String()}, zones...)...)
	if out := h.ok(append([]string{"jobs", "show", later.String()}, zones...)...); !strings.Contains(out, "ready") {
		t.Fatalf("after run-now:\n%s", out)
	}
	h.ok(append([]string{"jobs", "cancel", acme.String(), "--yes"}, zones...)...)
	h.fails("not found", append([]string{"jobs", "show", acme.String()}, zones...)...)
}
