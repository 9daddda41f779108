package quick_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

func TestPauseResume(t *testing.T) {
	e := newEnv(t, quick.Options{})
	paused, w, err := e.q.WatchPaused(e.ctx)
	if err != nil || len(paused) != 0 {
		t.Fatalf("initially: %v %v", paused, err)
	}
	if err := e.q.Pause(e.ctx, "email"); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(e.ctx); err != nil { // fired by the pause
		t.Fatalf("watch: %v", err)
	}
	paused, err = e.q.PausedTypes(e.ctx)
	if err != nil || !paused["email"].Equal(epoch) || len(paused) != 1 {
		t.Fatalf("after pause: %v %v", paused, err)
	}
	if err := e.q.Pause(e.ctx, "email"); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := e.q.Resume(e.ctx, "email"); err != nil {
		t.Fatal(err)
	}
	if paused, _ := e.q.PausedTypes(e.ctx); len(paused) != 0 {
		t.Errorf("after resume: %v", paused)
	}
	if err := e.q.Pause(e.ctx, ""); !errors.Is(err, quick.ErrInvalidTaskType) {
		t.Errorf("empty type: %v", err)
	}
}

func TestRunNow(t *testing.T) {
	e := newEnv(t, quick.Options{})
	ids := e.enqueue(t, quick.NewJob{TaskType: "email", Delay: time.Hour, Payload: []byte("later")}, quick.NewJob{TaskType: "email"})
	later, now := ids[0].ID, ids[1].ID
	if err := e.q.RunNow(e.ctx, later); err != nil {
		t.Fatal(err)
	}
	j, err := e.q.Get(e.ctx, later)
	if err != nil || j.State != quick.StateReady || string(j.Payload) != "later" {
		t.Fatalf("after run-now: %+v %v", j, err)
	}
	if err := e.q.RunNow(e.ctx, now); err != nil { // already ready: nothing to do
		t.Errorf("ready job: %v", err)
	}
	if got := len(e.claim(t, "w1", 10)); got != 2 {
		t.Errorf("claimed %d, want both", got)
	}
	if err := e.q.RunNow(e.ctx, later); !errors.Is(err, quick.ErrInvalidOption) {
		t.Errorf("leased job: %v", err)
	}
	if err := e.q.RunNow(e.ctx, quick.NewID(epoch)); !errors.Is(err, quick.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}

// TestCancelMatching: on a zones queue with tenants, a filter over 250 jobs
// cancels in batches of at most BulkBatch jobs per transaction, keeps to
// its tenants, leaves leased jobs unless asked, and respects the limit.
func TestCancelMatching(t *testing.T) {
	e := newEnv(t, quick.Options{ZoneLanes: 4})
	var jobs []quick.NewJob
	for i := range 250 {
		j := quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("tenant-%d", i%3)}
		if i%5 == 0 {
			j.Delay = time.Hour
		}
		jobs = append(jobs, j)
	}
	e.enqueue(t, jobs...)
	leased := e.claimZones(t, "w1", 2)
	perTenant := map[string]int{}
	for _, j := range jobs {
		perTenant[j.ItemSpace]++
	}
	before := e.db.Stats()
	r, err := e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email", ItemSpaces: []string{"tenant-0", "tenant-2"}}, quick.BulkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cost := e.db.Stats().Sub(before)
	leasedIn := 0
	for _, l := range leased {
		if l.ItemSpace != "tenant-1" {
			leasedIn++
		}
	}
	want := perTenant["tenant-0"] + perTenant["tenant-2"] - leasedIn
	if r.Done != want || r.Next != "" {
		t.Errorf("cancelled %+v, want %d (tenants 0 and 2 minus their leased jobs) and no Next", r, want)
	}
	if perCommit := float64(cost.Mutations) / float64(cost.Commits); perCommit > 6*quick.BulkBatch {
		t.Errorf("%.0f mutations per commit: batches not bounded", perCommit)
	}
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if left := d.Ready + d.Leased + d.Scheduled; left != 250-r.Done {
		t.Errorf("%d jobs left, want %d", left, 250-r.Done)
	}
	for _, td := range d.Tenants {
		if n := td.Ready + td.Scheduled; td.ItemSpace != "tenant-1" && n != 0 {
			t.Errorf("tenant %q keeps %d unleased jobs", td.ItemSpace, n)
		}
	}
	// Scheduled only, with a limit.
	r, err = e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email", State: quick.StateScheduled}, quick.BulkOptions{Limit: 10})
	if err != nil || r.Done != 10 || r.Next == "" {
		t.Errorf("scheduled, limit 10: %+v %v", r, err)
	}
	// Leased jobs only when named.
	r, err = e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email", State: quick.StateLeased}, quick.BulkOptions{})
	if err != nil || r.Done != 2 {
		t.Errorf("leased: %+v %v", r, err)
	}
	if _, err := e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email", State: quick.StateDead}, quick.BulkOptions{}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Errorf("dead: %v", err)
	}
}

// TestCancelMatchingIsBoundedByItsScanBudget: a call reads at most its
// budget and returns a cursor; the calls together cancel every match, also
// of an Untracked task type (no lookup by ID needed).
func TestCancelMatchingIsBoundedByItsScanBudget(t *testing.T) {
	e := newEnv(t, quick.Options{ZoneLanes: 2,
		TaskTypes: map[string]quick.TaskTypeOptions{"email": {Untracked: true}}})
	var jobs []quick.NewJob
	for i := range 120 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprint("t", i%4), UniqueKey: fmt.Sprint("k", i%2, "-", i)})
	}
	e.enqueue(t, jobs...)
	total, calls := 0, 0
	o := quick.BulkOptions{ScanBudget: 40}
	for {
		calls++
		before := e.db.Stats()
		r, err := e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email", UniqueKeyPrefix: "k1-"}, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Scanned > 40 {
			t.Fatalf("scanned %d keys, budget 40", r.Scanned)
		}
		// The lookups inside the cancel transaction read one key a job.
		if read := e.db.Stats().Sub(before).KeysRead; read > int64(40+r.Done) {
			t.Fatalf("a call read %d keys for %d cancels, budget 40", read, r.Done)
		}
		total += r.Done
		if r.Next == "" {
			break
		}
		o.After = r.Next
		if calls > 100 {
			t.Fatal("CancelMatching does not end")
		}
	}
	if total != 60 || calls < 3 {
		t.Fatalf("cancelled %d in %d calls, want 60 in at least 3", total, calls)
	}
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil || d.Ready != 60 {
		t.Fatalf("left %+v, %v; want 60 ready", d, err)
	}
}

func TestRequeueMatching(t *testing.T) {
	e := newEnv(t, quick.Options{})
	var jobs []quick.NewJob
	for i := range 30 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprint("t", i%3)})
	}
	e.enqueue(t, jobs...)
	for i, l := range e.claimZones(t, "w1", 30) {
		reason := "smtp 550"
		if i%3 == 0 {
			reason = "timeout"
		}
		if err := e.q.DeadLetter(e.ctx, l, reason); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.q.RequeueMatching(e.ctx, quick.DeadFilter{TaskType: "email", ErrorContains: "timeout"}, quick.BulkOptions{})
	if err != nil || r.Done != 10 || r.Next != "" || r.Scanned != 60 {
		t.Fatalf("requeued %+v, %v; want 10, 60 keys scanned, no Next", r, err)
	}
	if dead, _ := e.q.DeadCount(e.ctx, "email"); dead != 20 {
		t.Errorf("%d dead left, want 20", dead)
	}
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil || d.Ready != 10 || d.Dead != 20 {
		t.Errorf("depth after requeue %+v %v", d, err)
	}
	r, err = e.q.RequeueMatching(e.ctx, quick.DeadFilter{TaskType: "email", DiedBefore: epoch.Add(time.Second)}, quick.BulkOptions{Limit: 5})
	if err != nil || r.Done != 5 || r.Next == "" {
		t.Errorf("limit 5: %+v %v", r, err)
	}
	// A small budget: pages of 8 dead letters (16 keys), Next to go on.
	o := quick.BulkOptions{ScanBudget: 16}
	total := 0
	for range 20 {
		r, err = e.q.RequeueMatching(e.ctx, quick.DeadFilter{TaskType: "email"}, o)
		if err != nil || r.Scanned > 16 {
			t.Fatalf("budget 16: %+v %v", r, err)
		}
		total += r.Done
		if r.Next == "" {
			break
		}
		o.After = r.Next
	}
	if total != 15 {
		t.Errorf("requeued %d with a budget of 16 a call, want the 15 left", total)
	}
	r, err = e.q.RequeueMatching(e.ctx, quick.DeadFilter{TaskType: "email", DiedAfter: epoch}, quick.BulkOptions{})
	if err != nil || r.Done != 0 {
		t.Errorf("died after now: %+v %v", r, err)
	}
}
