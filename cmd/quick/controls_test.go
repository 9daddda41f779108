package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

func TestPauseResumeCommands(t *testing.T) {
	h := newHarness(t)
	h.fill()
	if out := h.ok("pause"); out != "no task type is paused\n" {
		t.Errorf("none paused: %q", out)
	}
	if out := h.ok("pause", "email"); !strings.HasPrefix(out, "paused email: workers stop claiming it") {
		t.Errorf("pause: %q", out)
	}
	if out := h.ok("pause", "-o", "json"); !strings.Contains(out, `"task_type": "email"`) {
		t.Errorf("list json: %s", out)
	}
	paused, err := h.queue().PausedTypes(context.Background())
	if err != nil || len(paused) != 1 {
		t.Fatalf("library sees %v %v", paused, err)
	}
	if out := h.ok("stats"); !strings.Contains(out, "email (paused)") || strings.Contains(out, "report (paused)") {
		t.Errorf("stats while paused:\n%s", out)
	}
	if out := h.ok("resume", "email"); !strings.HasPrefix(out, "resumed email") {
		t.Errorf("resume: %q", out)
	}
	h.fails(`unknown task type "emial"`, "pause", "emial")
	h.fails("needs one task type argument, got 0", "resume")
}

func TestJobsRunNow(t *testing.T) {
	h := newHarness(t)
	f := h.fill()
	id := f.delayed[0].String()
	if out := h.ok("jobs", "run-now", id); !strings.Contains(out, "runs now instead of 2025-01-02T04:04:16.000Z") {
		t.Errorf("run-now: %q", out)
	}
	if out := h.ok("jobs", "show", id); !strings.Contains(out, "state       ready") {
		t.Errorf("after run-now:\n%s", out)
	}
	h.fails("is already ready", "jobs", "run-now", id)
	h.fails("quick dead requeue", "jobs", "run-now", f.dead[0].String())
	h.fails("is leased: only a scheduled job", "jobs", "run-now", f.leased[0].String())
}

func TestJobsWait(t *testing.T) {
	h := newHarness(t)
	out := h.ok("enqueue", "--type", "email", "--waitable")
	id := uuidRE.FindString(out)
	q := h.queue()
	ctx := context.Background()

	// Finish it while the CLI waits.
	done := make(chan result, 1)
	go func() { done <- h.run("jobs", "wait", id, "-o", "json") }()
	c := h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1, Lease: time.Minute})
	if err := q.Complete(ctx, c[0]); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.stdout, `"outcome": "completed"`) {
		t.Fatalf("wait: %v %s", r.err, r.stdout)
	}
	// A cancelled job is told apart from a completed one, by wait and show.
	id2 := uuidRE.FindString(h.ok("enqueue", "--type", "email", "--waitable"))
	h.ok("jobs", "cancel", id2, "--yes")
	h.fails("did not complete: cancelled", "jobs", "wait", id2)
	// show tells it too, once Get reads a finished zones job's outcome
	// (until then: not found).
	if r := h.run("jobs", "show", id2); !strings.Contains(r.stdout, "cancelled at") && !quick.IsNotFound(r.err) {
		t.Errorf("show cancelled: %v %q", r.err, r.stdout)
	}
	if r := h.run("jobs", "show", id); !strings.Contains(r.stdout, "completed at") && !quick.IsNotFound(r.err) {
		t.Errorf("show completed: %v %q", r.err, r.stdout)
	}
	// Not waitable: an error at once.
	id3 := uuidRE.FindString(h.ok("enqueue", "--type", "email"))
	h.fails("not waitable", "jobs", "wait", id3)

	// --timeout on the CLI's clock.
	id4 := uuidRE.FindString(h.ok("enqueue", "--type", "email", "--waitable"))
	slept := h.clk.Changed()
	done = make(chan result, 1)
	go func() { done <- h.run("jobs", "wait", id4, "--timeout", "30s") }()
	waitSleep(t, slept)
	h.clk.Advance(30 * time.Second)
	if r := <-done; r.err == nil || !strings.Contains(r.err.Error(), "has not finished after --timeout 30s") {
		t.Errorf("timeout: %v", r.err)
	}
}

func TestBulkCancelAndRequeue(t *testing.T) {
	h := newHarness(t)
	h.fill()
	// 35 ready, 5 scheduled email jobs: cancel the scheduled ones.
	h.failsIn("no\n", "aborted", "jobs", "cancel", "--type", "email", "--state", "scheduled")
	r := h.runIn("yes\n", "jobs", "cancel", "--type", "email", "--state", "scheduled")
	if r.err != nil || r.stdout != "cancelled 5 email jobs (in transactions of at most 100)\n" {
		t.Fatalf("cancel --filter: %v %q", r.err, r.stdout)
	}
	if out := h.ok("jobs", "cancel", "--type", "email", "--priority", "high", "--yes", "-o", "json"); !strings.Contains(out, `"cancelled": 4`) {
		t.Errorf("cancel high: %s", out) // 8 high; 3 leased and 1 dead-lettered by the fixture
	}
	if out := h.ok("dead", "requeue", "--type", "email", "--error-contains", "mailbox"); out != "requeued 2 dead email jobs: they run now with their attempts reset\n" {
		t.Errorf("dead requeue --filter: %q", out)
	}
	if out := h.ok("stats", "--type", "email"); !strings.Contains(out, "email      33     3       0          0") {
		t.Errorf("stats after:\n%s", out)
	}
	h.fails(`unknown task type "nope"`, "jobs", "cancel", "--type", "nope", "--yes")
}
