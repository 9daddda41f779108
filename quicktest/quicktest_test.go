package quicktest_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/quicktest"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Retries int    `json:"retries,omitempty"`
}

func (Email) Kind() string { return "email" }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newQueue opens a queue with two lanes a zone.
func newQueue(t *testing.T) (*quick.Queue, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	q, err := quick.Open(context.Background(), memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"qt"}), quick.Options{Clock: clk, ZoneLanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	return q, clk
}

func insert(t *testing.T, q *quick.Queue, args quick.JobArgs, opts *quick.InsertOpts) quick.ID {
	t.Helper()
	j, err := quick.ArgsJob(args, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

// fakeTB records a failure and stops the helper's goroutine, as
// testing.T's Fatalf does.
type fakeTB struct {
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Context() context.Context { return context.Background() }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fake TB in its own goroutine and returns the failure
// message, "" when fn passed.
func run(fn func(tb quicktest.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func TestRequireEnqueuedPasses(t *testing.T) {
	q, _ := newQueue(t)
	id := insert(t, q, Email{To: "ada@example.com", Subject: "hi"}, &quick.InsertOpts{
		Priority: quick.High, ItemSpace: "tenant-1", MaxAttempts: 7, UniqueKey: "u1", Delay: time.Hour,
	})
	got := quicktest.RequireEnqueued(t, q, Email{Subject: "hi", To: "ada@example.com"}, &quicktest.RequireOpts{
		Priority: quick.High, ItemSpace: "tenant-1", MaxAttempts: 7, UniqueKey: "u1",
		ScheduledAt: t0.Add(time.Hour + 500*time.Millisecond), State: quick.StateScheduled,
	})
	if got.ID != id {
		t.Fatalf("got job %s, want %s", got.ID, id)
	}
	quicktest.RequireNotEnqueued(t, q, Email{To: "bob@example.com", Subject: "hi"}, nil)
}

func TestRequireEnqueuedFailureListsJobs(t *testing.T) {
	q, _ := newQueue(t)
	insert(t, q, Email{To: "ada@example.com", Subject: "hi"}, &quick.InsertOpts{Priority: quick.Low})
	insert(t, q, Email{To: "bob@example.com", Subject: "yo"}, &quick.InsertOpts{ItemSpace: "t2"})

	msg := run(func(tb quicktest.TB) {
		quicktest.RequireEnqueued(tb, q, Email{To: "cy@example.com", Subject: "hi"}, nil)
	})
	for _, want := range []string{
		`no live job of kind "email" with args {"subject":"hi","to":"cy@example.com"}`,
		`live jobs of kind "email" (2):`,
		`args={"subject":"hi","to":"ada@example.com"} priority=low item_space=""`,
		`args={"subject":"yo","to":"bob@example.com"} priority=normal item_space="t2"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}

	// Args match, an option does not: the message says which.
	msg = run(func(tb quicktest.TB) {
		quicktest.RequireEnqueued(tb, q, Email{To: "ada@example.com", Subject: "hi"}, &quicktest.RequireOpts{Priority: quick.High, MaxAttempts: 3})
	})
	if !regexp.MustCompile(`job [0-9a-f-]+ has the args but priority is low, want high, max attempts is \d+, want 3`).MatchString(msg) {
		t.Errorf("message does not name the mismatch:\n%s", msg)
	}
	if !strings.Contains(msg, "and priority high, max attempts 3") {
		t.Errorf("message does not state the expectation:\n%s", msg)
	}

	// Scheduled time outside the tolerance.
	msg = run(func(tb quicktest.TB) {
		quicktest.RequireEnqueued(tb, q, Email{To: "ada@example.com", Subject: "hi"}, &quicktest.RequireOpts{ScheduledAt: t0.Add(time.Minute)})
	})
	if !strings.Contains(msg, "scheduled at 2026-01-02T03:04:05Z, want 2026-01-02T03:05:05Z ± 1s") {
		t.Errorf("message does not name the scheduled time:\n%s", msg)
	}
}

func TestRequireEnqueuedNoJobs(t *testing.T) {
	q, _ := newQueue(t)
	msg := run(func(tb quicktest.TB) { quicktest.RequireEnqueued(tb, q, Email{To: "a"}, nil) })
	if !strings.Contains(msg, `no live jobs of kind "email" are enqueued`) {
		t.Errorf("message:\n%s", msg)
	}
}

func TestRequireNotEnqueuedFails(t *testing.T) {
	q, _ := newQueue(t)
	insert(t, q, Email{To: "ada@example.com"}, &quick.InsertOpts{})
	msg := run(func(tb quicktest.TB) { quicktest.RequireNotEnqueued(tb, q, Email{To: "ada@example.com"}, nil) })
	if !strings.Contains(msg, `want no live job of kind "email" with args {"subject":"","to":"ada@example.com"}; found 1`) ||
		!strings.Contains(msg, "matching jobs:") {
		t.Errorf("message:\n%s", msg)
	}
	msg = run(func(tb quicktest.TB) {
		quicktest.RequireNotEnqueued(tb, q, Email{}, &quicktest.RequireOpts{AnyArgs: true})
	})
	if !strings.Contains(msg, `want no live job of kind "email" with any args; found 1`) {
		t.Errorf("message:\n%s", msg)
	}
	// A completed job is no longer enqueued.
	res := quicktest.Work(context.Background(), t, q, func(context.Context, *worker.Job[Email]) error { return nil }, Email{To: "x"}, nil)
	if res.Event != quicktest.EventCompleted {
		t.Fatalf("event %s", res.Event)
	}
	quicktest.RequireNotEnqueued(t, q, Email{To: "x"}, nil)
}

func TestRequireEnqueuedTxSeesUncommitted(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	errRollback := errors.New("roll back")
	err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		j, _ := quick.ArgsJob(Email{To: "tx@example.com"}, nil)
		if _, err := q.EnqueueTx(tr, j); err != nil {
			return err
		}
		quicktest.RequireEnqueuedTx(t, tr, q, Email{To: "tx@example.com"}, nil)
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	// Rolled back: outside the transaction nothing is there.
	quicktest.RequireNotEnqueued(t, q, Email{}, &quicktest.RequireOpts{AnyArgs: true})
}

func TestRequireManyEnqueued(t *testing.T) {
	q, _ := newQueue(t)
	a := insert(t, q, Email{To: "a"}, &quick.InsertOpts{})
	b := insert(t, q, Email{To: "a"}, &quick.InsertOpts{Priority: quick.High})
	got := quicktest.RequireManyEnqueued(t, q, []quicktest.ExpectedJob{
		{Args: Email{To: "a"}, Opts: &quicktest.RequireOpts{Priority: quick.High}},
		{Args: Email{To: "a"}},
	})
	if got[0].ID != b || got[1].ID != a {
		t.Fatalf("matched %s, %s; want %s, %s", got[0].ID, got[1].ID, b, a)
	}
	msg := run(func(tb quicktest.TB) {
		quicktest.RequireManyEnqueued(tb, q, []quicktest.ExpectedJob{{Args: Email{To: "a"}}, {Args: Email{To: "a"}}, {Args: Email{To: "a"}}})
	})
	if !strings.Contains(msg, `expected job 2: no unmatched live job of kind "email" with args {"subject":"","to":"a"}`) {
		t.Errorf("message:\n%s", msg)
	}
}

func TestWorkOutcomes(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	cases := []struct {
		name string
		h    worker.Handler[Email]
		want quicktest.Event
		st   quick.State
	}{
		{"complete", func(context.Context, *worker.Job[Email]) error { return nil }, quicktest.EventCompleted, quick.StateFinished},
		{"fail", func(context.Context, *worker.Job[Email]) error { return errors.New("smtp down") }, quicktest.EventFailed, quick.StateScheduled},
		{"snooze", func(context.Context, *worker.Job[Email]) error { return worker.Snooze(time.Minute) }, quicktest.EventSnoozed, quick.StateScheduled},
		{"cancel", func(context.Context, *worker.Job[Email]) error { return worker.Cancel("bad address") }, quicktest.EventCancelled, quick.StateCancelled},
		{"complete-with", func(ctx context.Context, j *worker.Job[Email]) error {
			return j.CompleteWith(ctx, func(tr kv.Transaction) error { tr.Set([]byte("sent/"+j.Args.To), nil); return nil })
		}, quicktest.EventCompleted, quick.StateFinished},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := quicktest.Work(ctx, t, q, c.h, Email{To: c.name}, &quicktest.WorkOpts{Insert: &quick.InsertOpts{MaxAttempts: 5}})
			if res.Event != c.want || res.Job.State != c.st {
				t.Fatalf("event %s, state %v; want %s, %v (err %v)", res.Event, res.Job.State, c.want, c.st, res.Err)
			}
			if res.Lease.Attempt != 1 {
				t.Fatalf("attempt %d, want 1", res.Lease.Attempt)
			}
		})
	}
}

// With retention (here the insert's own, InsertOpts.Retain) the job after
// the run is its finished record: completed, or cancelled with its reason.
func TestWorkOutcomesRetained(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	opts := &quicktest.WorkOpts{Insert: &quick.InsertOpts{Retain: time.Hour}}
	done := quicktest.Work(ctx, t, q, func(context.Context, *worker.Job[Email]) error { return nil }, Email{To: "a"}, opts)
	if done.Event != quicktest.EventCompleted || done.Job.State != quick.StateCompleted || done.Job.Attempt != 1 {
		t.Fatalf("completed run: %s, %+v", done.Event, done.Job)
	}
	c := quicktest.Work(ctx, t, q, func(context.Context, *worker.Job[Email]) error { return worker.Cancel("bad address") }, Email{To: "b"}, opts)
	if c.Event != quicktest.EventCancelled || c.Job.State != quick.StateCancelled || c.Job.LastError != "bad address" {
		t.Fatalf("cancelled run: %s, %+v", c.Event, c.Job)
	}
}

func TestWorkJobGivenAndDecodeFailure(t *testing.T) {
	q, clk := newQueue(t)
	ctx := context.Background()
	// A job delayed a day still runs now, and sees its args.
	id := insert(t, q, Email{To: "later"}, &quick.InsertOpts{Delay: 24 * time.Hour})
	var seen string
	res := quicktest.WorkJob(ctx, t, q, func(_ context.Context, j *worker.Job[Email]) error { seen = j.Args.To; return nil }, id, nil)
	if res.Event != quicktest.EventCompleted || seen != "later" {
		t.Fatalf("event %s, seen %q", res.Event, seen)
	}
	// A payload that does not decode dead-letters the job.
	res2, err := q.Enqueue(ctx, quick.NewJob{TaskType: "email", Payload: []byte("not json")})
	if err != nil {
		t.Fatal(err)
	}
	res = quicktest.WorkJob(ctx, t, q, func(context.Context, *worker.Job[Email]) error { return nil }, res2[0].ID, nil)
	if res.Event != quicktest.EventDeadLettered || !errors.Is(res.Err, worker.ErrDecode) {
		t.Fatalf("event %s, err %v", res.Event, res.Err)
	}
	// A finished job cannot be worked: a clear failure, not a panic.
	msg := run(func(tb quicktest.TB) {
		quicktest.WorkJob(ctx, tb, q, func(context.Context, *worker.Job[Email]) error { return nil }, id, nil)
	})
	if !strings.Contains(msg, "is not pending (finished, or never enqueued)") {
		t.Errorf("message:\n%s", msg)
	}
	_ = clk
}

func TestWorkTimeoutOnFakeClock(t *testing.T) {
	q, clk := newQueue(t)
	h := func(ctx context.Context, _ *worker.Job[Email]) error {
		clk.Advance(2 * time.Second)
		<-ctx.Done()
		return context.Cause(ctx)
	}
	res := quicktest.Work(context.Background(), t, q, h, Email{To: "slow"}, &quicktest.WorkOpts{Handler: worker.HandlerOptions{Timeout: time.Second}})
	if res.Event != quicktest.EventFailed || !errors.Is(res.Err, worker.ErrHandlerTimeout) {
		t.Fatalf("event %s, err %v", res.Event, res.Err)
	}
}

// The handler gets the real worker.Job: a checkpoint is kept for the next
// run, which WorkJob starts at once.
func TestWorkCheckpointCarriesOver(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	h := func(ctx context.Context, j *worker.Job[Email]) error {
		if j.Lease.Checkpoint == nil {
			if err := j.Checkpoint(ctx, []byte("step 1")); err != nil {
				return err
			}
			return errors.New("crash after step 1")
		}
		if string(j.Lease.Checkpoint) != "step 1" || j.Lease.Attempt != 2 {
			return fmt.Errorf("resumed at %q, attempt %d", j.Lease.Checkpoint, j.Lease.Attempt)
		}
		return nil
	}
	res := quicktest.Work(ctx, t, q, h, Email{To: "ck"}, nil)
	if res.Event != quicktest.EventFailed || !res.Job.HasCheckpoint {
		t.Fatalf("first run: %s, checkpoint %v, err %v", res.Event, res.Job.HasCheckpoint, res.Err)
	}
	res = quicktest.WorkJob(ctx, t, q, h, res.Job.ID, nil)
	if res.Event != quicktest.EventCompleted {
		t.Fatalf("second run: %s (%v)", res.Event, res.Err)
	}
}

// A job cancelled while its handler runs: the handler's success is not
// acked, and the result says the lease was lost.
func TestWorkLeaseLostAtAck(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	h := func(ctx context.Context, j *worker.Job[Email]) error {
		return q.Cancel(ctx, j.Lease.ID)
	}
	res := quicktest.Work(ctx, t, q, h, Email{To: "gone"}, nil)
	if res.Event != quicktest.EventLeaseLost || !quick.IsLeaseLost(res.Err) || res.Job.State != quick.StateFinished {
		t.Fatalf("event %s, err %v, state %v", res.Event, res.Err, res.Job.State)
	}
}

// A leased job cannot be worked (that would be a second lease), and a
// payload that is not JSON is listed as such rather than breaking the
// listing.
func TestWorkJobLeasedAndNonJSONListing(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	id := insert(t, q, Email{To: "busy"}, &quick.InsertOpts{})
	if c, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "other"}); err != nil || len(c.Jobs) != 1 {
		t.Fatal(c, err)
	}
	msg := run(func(tb quicktest.TB) {
		quicktest.WorkJob(ctx, tb, q, func(context.Context, *worker.Job[Email]) error { return nil }, id, nil)
	})
	if !strings.Contains(msg, "is leased: only a scheduled or ready job can be worked") {
		t.Errorf("message:\n%s", msg)
	}
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "email", Payload: []byte{0xff, 'x'}}); err != nil {
		t.Fatal(err)
	}
	msg = run(func(tb quicktest.TB) { quicktest.RequireEnqueued(tb, q, Email{To: "nobody"}, nil) })
	if !strings.Contains(msg, `args="\xffx" (not JSON)`) || !strings.Contains(msg, `"to":"busy"`) || !strings.Contains(msg, "state=leased") {
		t.Errorf("message:\n%s", msg)
	}
}

// A job whose attempts are spent is not run again by WorkJob (a claim
// would dead-letter it).
func TestWorkJobAttemptsSpent(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	fail := func(context.Context, *worker.Job[Email]) error { return errors.New("no") }
	res := quicktest.Work(ctx, t, q, fail, Email{To: "once"}, &quicktest.WorkOpts{Insert: &quick.InsertOpts{MaxAttempts: 2}})
	if res.Event != quicktest.EventFailed || res.Job.State != quick.StateScheduled {
		t.Fatalf("first run: %s %v", res.Event, res.Job.State)
	}
	res = quicktest.WorkJob(ctx, t, q, fail, res.Job.ID, nil)
	if res.Event != quicktest.EventFailed || res.Job.State != quick.StateDead {
		t.Fatalf("last run: %s %v", res.Event, res.Job.State)
	}
	msg := run(func(tb quicktest.TB) { quicktest.WorkJob(ctx, tb, q, fail, res.Job.ID, nil) })
	if !strings.Contains(msg, "is dead: only a scheduled or ready job can be worked") {
		t.Errorf("message:\n%s", msg)
	}
}

// A job whose last attempt's holder vanished (its lease lapsed) has spent
// its attempts: WorkJob refuses it, as a claim would dead-letter it.
func TestWorkJobLapsedLastAttempt(t *testing.T) {
	q, clk := newQueue(t)
	ctx := context.Background()
	id := insert(t, q, Email{To: "lapsed"}, &quick.InsertOpts{MaxAttempts: 1})
	if c, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "vanished", Lease: 30 * time.Second}); err != nil || len(c.Jobs) != 1 {
		t.Fatal(c, err)
	}
	clk.Advance(time.Minute)
	msg := run(func(tb quicktest.TB) {
		quicktest.WorkJob(ctx, tb, q, func(context.Context, *worker.Job[Email]) error { return nil }, id, nil)
	})
	if !strings.Contains(msg, "has spent its 1 attempts") {
		t.Errorf("message:\n%s", msg)
	}
}

// TestTenants: on a zones queue with several tenants (item spaces), the
// assertions see every tenant's jobs, inside a transaction too, and Work
// and WorkJob run a given tenant's job and leave the others alone.
func TestTenants(t *testing.T) {
	q, _ := newQueue(t)
	ctx := context.Background()
	tenants := []string{"", "acme", "globex", "initech"}
	ids := map[string]quick.ID{}
	for _, ts := range tenants {
		ids[ts] = insert(t, q, Email{To: "x@" + ts}, &quick.InsertOpts{ItemSpace: ts})
	}
	insert(t, q, Email{To: "later@acme"}, &quick.InsertOpts{ItemSpace: "acme", Delay: time.Hour})
	for _, ts := range tenants {
		j := quicktest.RequireEnqueued(t, q, Email{To: "x@" + ts}, &quicktest.RequireOpts{ItemSpace: ts, State: quick.StateReady})
		if j.ID != ids[ts] || j.ItemSpace != ts {
			t.Fatalf("tenant %q: found %+v", ts, j)
		}
	}
	quicktest.RequireEnqueued(t, q, Email{To: "later@acme"}, &quicktest.RequireOpts{ItemSpace: "acme", State: quick.StateScheduled, ScheduledAt: t0.Add(time.Hour)})
	quicktest.RequireNotEnqueued(t, q, Email{To: "x@acme"}, &quicktest.RequireOpts{ItemSpace: "globex"})
	if msg := run(func(tb quicktest.TB) {
		quicktest.RequireNotEnqueued(tb, q, Email{To: "x@globex"}, &quicktest.RequireOpts{ItemSpace: "globex"})
	}); !strings.Contains(msg, `item_space="globex"`) {
		t.Errorf("RequireNotEnqueued of a globex job: %q", msg)
	}
	got := quicktest.RequireManyEnqueued(t, q, []quicktest.ExpectedJob{
		{Args: Email{To: "x@initech"}, Opts: &quicktest.RequireOpts{ItemSpace: "initech"}},
		{Args: Email{}, Opts: &quicktest.RequireOpts{AnyArgs: true, ItemSpace: "acme", State: quick.StateScheduled}},
		{Args: Email{To: "x@"}},
	})
	if got[0].ID != ids["initech"] || got[2].ID != ids[""] {
		t.Fatalf("matched %v", got)
	}
	// Inside a transaction: another tenant's uncommitted job is seen.
	errRollback := errors.New("roll back")
	err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		j, _ := quick.ArgsJob(Email{To: "tx@umbrella"}, &quick.InsertOpts{ItemSpace: "umbrella"})
		if _, err := q.EnqueueTx(tr, j); err != nil {
			return err
		}
		quicktest.RequireEnqueuedTx(t, tr, q, Email{To: "tx@umbrella"}, &quicktest.RequireOpts{ItemSpace: "umbrella"})
		quicktest.RequireEnqueuedTx(t, tr, q, Email{To: "x@globex"}, nil)
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	quicktest.RequireNotEnqueued(t, q, Email{To: "tx@umbrella"}, nil)
	// Work inserts in a tenant and runs that job; WorkJob runs globex's.
	var seen []string
	h := func(_ context.Context, j *worker.Job[Email]) error { seen = append(seen, j.Args.To); return nil }
	res := quicktest.Work(ctx, t, q, h, Email{To: "work@umbrella"}, &quicktest.WorkOpts{Insert: &quick.InsertOpts{ItemSpace: "umbrella"}})
	if res.Event != quicktest.EventCompleted || res.Lease.ItemSpace != "umbrella" || res.Job.State != quick.StateFinished {
		t.Fatalf("Work: %+v", res)
	}
	res = quicktest.WorkJob(ctx, t, q, h, ids["globex"], nil)
	if res.Event != quicktest.EventCompleted || res.Lease.ItemSpace != "globex" {
		t.Fatalf("WorkJob: %+v", res)
	}
	if strings.Join(seen, ",") != "work@umbrella,x@globex" {
		t.Fatalf("handled %v", seen)
	}
	quicktest.RequireNotEnqueued(t, q, Email{To: "x@globex"}, nil)
	for _, ts := range []string{"", "acme", "initech"} {
		quicktest.RequireEnqueued(t, q, Email{To: "x@" + ts}, &quicktest.RequireOpts{ItemSpace: ts, State: quick.StateReady})
	}
}
