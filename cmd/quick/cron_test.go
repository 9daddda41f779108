package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCron(t *testing.T) {
	h := newHarness(t)
	if out := h.ok("cron", "list"); out != "no cron schedules\n" {
		t.Errorf("empty: %q", out)
	}
	out := h.ok("cron", "add", "--name", "nightly", "--spec", "30 2 * * *", "--type", "report", "--payload", "full", "--tz", "Europe/Paris")
	if out != "schedule nightly (30 2 * * *, task type report) registered; next run at 2025-01-03T01:30:00.000Z (in 22h25m)\n" {
		t.Errorf("add: %q", out)
	}
	h.ok("cron", "add", "--name", "tick", "--spec", "@every 10s", "--type", "tick", "--priority", "high", "--missed", "skip-all")
	golden(t, "cron_list", maskIDs(h.ok("cron", "list")))

	var doc struct {
		Schedules []cronJSON `json:"schedules"`
	}
	err := json.Unmarshal([]byte(h.ok("cron", "list", "-o", "json")), &doc)
	es := doc.Schedules
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Name != "nightly" || es[0].TimeZone != "Europe/Paris" || !es[0].Alive || es[1].MissedRuns != "skip-all" || es[1].Priority != "high" {
		t.Errorf("json: %+v", es)
	}

	h.fails("invalid schedule spec", "cron", "add", "--name", "bad", "--spec", "61 * * * *", "--type", "x")
	h.fails("required flag --spec not set", "cron", "add", "--name", "bad", "--type", "x")
	h.fails(`invalid --missed "sometimes"`, "cron", "add", "--name", "bad", "--spec", "@daily", "--type", "x", "--missed", "sometimes")
	h.fails("invalid priority", "cron", "add", "--name", "bad", "--spec", "@daily", "--type", "x", "--priority", "max")

	// A broken chain (its occurrence cancelled by hand) shows, and repair mends it.
	id := es[1].NextID
	r := h.runIn("yes\n", "jobs", "cancel", id)
	if r.err != nil || !strings.Contains(r.stderr, "an occurrence of cron schedule tick") {
		t.Fatalf("cancel occurrence: %v %q", r.err, r.stderr)
	}
	if out := h.ok("cron", "list"); !strings.Contains(out, "broken: run `quick cron repair`") {
		t.Errorf("broken chain not shown:\n%s", out)
	}
	// Repair enqueues the next time after now; at the cancelled run's own
	// time its ID (and enqueue marker) would be the cancelled one's.
	h.clk.Advance(10 * time.Second)
	if out := h.ok("cron", "repair"); out != "restored 1 broken schedule chains\n" {
		t.Errorf("repair: %q", out)
	}

	h.failsIn("no\n", "aborted: not confirmed", "cron", "remove", "tick")
	r = h.runIn("yes\n", "cron", "remove", "tick")
	if r.err != nil || r.stdout != "removed schedule tick\n" || !strings.Contains(r.stderr, "Remove schedule tick (@every 10s, task type tick)? Its next run") {
		t.Fatalf("remove: %v %q %q", r.err, r.stdout, r.stderr)
	}
	h.fails(`schedule not found: "tick"`, "cron", "remove", "--yes", "tick")
	h.fails("needs one schedule name argument", "cron", "remove")
	if out := h.ok("cron", "remove", "-y", "-o", "json", "nightly"); !strings.Contains(out, `"removed": true`) {
		t.Errorf("remove json: %s", out)
	}
}
