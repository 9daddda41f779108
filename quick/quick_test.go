package quick_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func TestMain(m *testing.M) {
	// The state-machine test drives thousands of jobs by default (400
	// rapid checks, about 3,000 jobs); -rapid.checks still overrides it.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		_ = flag.Set("rapid.checks", "400")
	}
	fdbtest.Main(m)
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	q   *quick.Queue
	clk *clock.Fake
	db  *kv.CountedDB
	ctx context.Context
}

func newEnv(t testing.TB, opts quick.Options) *env {
	t.Helper()
	raw, space := fdbtest.Open(t)
	db := kv.WithCounters(raw)
	clk := clock.NewFake(epoch)
	opts.Clock = clk
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
	}
	ctx := context.Background()
	q, err := quick.Open(ctx, db, space, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{q: q, clk: clk, db: db, ctx: ctx}
}

func (e *env) enqueue(t testing.TB, jobs ...quick.NewJob) []quick.Enqueued {
	t.Helper()
	res, err := e.q.Enqueue(e.ctx, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *env) claim(t testing.TB, holder string, max int) []quick.Lease {
	t.Helper()
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: holder, Max: max, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

func TestLifecycleEnqueueClaimComplete(t *testing.T) {
	e := newEnv(t, quick.Options{})
	res := e.enqueue(t, quick.NewJob{TaskType: "email", Payload: []byte("hello")})
	if res[0].Duplicate || res[0].ID.IsZero() {
		t.Fatalf("enqueue result %+v", res[0])
	}
	ls := e.claim(t, "w1", 10)
	if len(ls) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(ls))
	}
	l := ls[0]
	if l.ID != res[0].ID || string(l.Payload) != "hello" || l.Attempt != 1 || l.Holder != "w1" {
		t.Fatalf("lease %+v", l)
	}
	if !l.Deadline.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("deadline %v, want %v", l.Deadline, epoch.Add(time.Minute))
	}
	if again := e.claim(t, "w2", 10); len(again) != 0 {
		t.Fatalf("a leased job was claimed again: %+v", again)
	}
	info, err := e.q.Get(e.ctx, l.ID)
	if err != nil || info.State != quick.StateLeased || info.Holder != "w1" {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	info, err = e.q.Get(e.ctx, l.ID)
	if !finished(info, err) {
		t.Fatalf("after complete Get = %+v, %v", info, err)
	}
	if err := e.q.Complete(e.ctx, l); !quick.IsLeaseLost(err) {
		t.Fatalf("second complete: %v, want lease lost", err)
	}
}

func TestDelayedJobVestsOnTime(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email", Delay: 10 * time.Second})
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 0 {
		t.Fatal("claimed a job before it vested")
	}
	if want := epoch.Add(10 * time.Second); !res.NextVest.Equal(want) {
		t.Fatalf("NextVest = %v, want %v", res.NextVest, want)
	}
	e.clk.Advance(10 * time.Second)
	if got := e.claim(t, "w", 1); len(got) != 1 {
		t.Fatalf("claimed %d after vesting, want 1", len(got))
	}
}

func TestHighPriorityNotBehindBacklog(t *testing.T) {
	e := newEnv(t, quick.Options{})
	var backlog []quick.NewJob
	for i := 0; i < 200; i++ {
		backlog = append(backlog, quick.NewJob{TaskType: "email", Priority: quick.Low, Payload: []byte("low")})
	}
	e.enqueue(t, backlog...)
	e.clk.Advance(time.Second)
	e.enqueue(t, quick.NewJob{TaskType: "email", Priority: quick.High, Payload: []byte("urgent")})
	ls := e.claim(t, "w", 1)
	if len(ls) != 1 || string(ls[0].Payload) != "urgent" || ls[0].Priority != quick.High {
		t.Fatalf("first claim took %+v, want the high-priority job", ls)
	}
}

func TestExpiredLeaseIsTakenOverAndOldHolderLocked(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	old := e.claim(t, "w1", 1)[0]
	e.clk.Advance(time.Minute + time.Millisecond)
	taken := e.claim(t, "w2", 1)
	if len(taken) != 1 || taken[0].ID != old.ID || taken[0].Attempt != 2 {
		t.Fatalf("takeover claim = %+v", taken)
	}
	for name, op := range map[string]func() error{
		"complete": func() error { return e.q.Complete(e.ctx, old) },
		"fail":     func() error { return e.q.Fail(e.ctx, old, "x") },
		"snooze":   func() error { return e.q.Snooze(e.ctx, old, time.Minute) },
		"release":  func() error { return e.q.Release(e.ctx, old) },
		"extend":   func() error { _, err := e.q.Extend(e.ctx, old, time.Minute); return err },
		"ckpt":     func() error { _, err := e.q.Checkpoint(e.ctx, old, []byte("x"), time.Minute); return err },
	} {
		err := op()
		var lost *quick.LeaseLostError
		if !errors.As(err, &lost) || lost.ID != old.ID {
			t.Errorf("%s by the old holder: %v, want LeaseLostError", name, err)
		}
	}
	if err := e.q.Complete(e.ctx, taken[0]); err != nil {
		t.Fatalf("new holder complete: %v", err)
	}
}

func TestExpiredButNotReplacedHolderMayComplete(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	l := e.claim(t, "w1", 1)[0]
	e.clk.Advance(2 * time.Minute)
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatalf("complete after expiry, nobody replaced: %v", err)
	}
}

func TestExtendKeepsJobAndChangesKey(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email", Payload: bytes.Repeat([]byte("p"), 10_000)})
	l := e.claim(t, "w1", 1)[0]
	e.clk.Advance(50 * time.Second)
	before := e.db.Stats()
	l2, err := e.q.Extend(e.ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d := e.db.Stats().Sub(before)
	// The schedule key moves (a clear and a set) and the lease index is
	// set: about 220 bytes, never the 10 kB payload.
	if d.BytesWritten > 300 {
		t.Fatalf("extend wrote %d bytes: it must not rewrite the 10 kB payload", d.BytesWritten)
	}
	e.clk.Advance(30 * time.Second) // past the first deadline, within the second
	if got := e.claim(t, "w2", 1); len(got) != 0 {
		t.Fatal("an extended lease was taken over")
	}
	if err := e.q.Complete(e.ctx, l2); err != nil {
		t.Fatal(err)
	}
}

func TestFailBackoffThenDeadLetterAndRequeue(t *testing.T) {
	e := newEnv(t, quick.Options{})
	id := e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 2, Payload: []byte("p")})[0].ID
	l := e.claim(t, "w", 1)[0]
	if err := e.q.Fail(e.ctx, l, "smtp down"); err != nil {
		t.Fatalf("first fail: %v", err)
	}
	if info, _ := e.q.Get(e.ctx, id); info.State != quick.StateScheduled {
		t.Fatalf("after the first fail %+v, want scheduled", info)
	}
	if got := e.claim(t, "w", 1); len(got) != 0 {
		t.Fatal("a failed job ran again before its backoff")
	}
	e.clk.Advance(time.Minute) // backoff(1) = 1 minute in newEnv
	l = e.claim(t, "w", 1)[0]
	if l.Attempt != 2 || l.LastError != "smtp down" {
		t.Fatalf("retry lease %+v", l)
	}
	if err := e.q.Fail(e.ctx, l, "still down"); err != nil {
		t.Fatalf("last fail: %v", err)
	}
	page, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "email", Limit: 10})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].LastError != "still down" || string(page.Jobs[0].Payload) != "p" {
		t.Fatalf("dead letters %+v, %v", page, err)
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 1 {
		t.Fatalf("dead count %d", n)
	}
	if err := e.q.Requeue(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 0 {
		t.Fatalf("dead count after requeue %d", n)
	}
	l = e.claim(t, "w", 1)[0]
	if l.ID != id || l.Attempt != 1 {
		t.Fatalf("requeued lease %+v", l)
	}
}

func TestSnoozeAndReleaseSpendNoAttempt(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 1})
	l := e.claim(t, "w", 1)[0]
	if err := e.q.Snooze(e.ctx, l, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := e.claim(t, "w", 1); len(got) != 0 {
		t.Fatal("snoozed job ran early")
	}
	e.clk.Advance(30 * time.Second)
	l = e.claim(t, "w", 1)[0]
	if l.Attempt != 1 {
		t.Fatalf("attempt after snooze = %d, want 1", l.Attempt)
	}
	if err := e.q.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	l = e.claim(t, "w", 1)[0]
	if l.Attempt != 1 {
		t.Fatalf("attempt after release = %d, want 1", l.Attempt)
	}
}

func TestCheckpointResumedByNextHolder(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email"})
	l := e.claim(t, "w1", 1)[0]
	l, err := e.q.Checkpoint(e.ctx, l, []byte("page=7"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Minute) // w1 vanished
	l2 := e.claim(t, "w2", 1)[0]
	if string(l2.Checkpoint) != "page=7" {
		t.Fatalf("checkpoint = %q", l2.Checkpoint)
	}
	if _, err := e.q.Checkpoint(e.ctx, l, []byte("page=8"), time.Minute); !quick.IsLeaseLost(err) {
		t.Fatalf("stale checkpoint: %v", err)
	}
}

func TestUniqueKey(t *testing.T) {
	e := newEnv(t, quick.Options{})
	a := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "user-1"})[0]
	b := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "user-1"})[0]
	if !b.Duplicate || b.ID != a.ID {
		t.Fatalf("second unique enqueue = %+v, want duplicate of %s", b, a.ID)
	}
	in := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "user-2"}, quick.NewJob{TaskType: "email", UniqueKey: "user-2"})
	if in[0].Duplicate || !in[1].Duplicate || in[1].ID != in[0].ID {
		t.Fatalf("same key twice in one batch: %+v", in)
	}
	for _, l := range e.claim(t, "w", 10) {
		if err := e.q.Complete(e.ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	c := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "user-1"})[0]
	if c.Duplicate || c.ID == a.ID {
		t.Fatalf("unique key not freed by completion: %+v", c)
	}
}

func TestEnqueueRetryAfterUnknownResultCreatesOneJob(t *testing.T) {
	raw, space := fdbtest.Open(t)
	faulty := kv.WithFaults(raw, kv.Faults{UnknownCommitted: 1})
	clk := clock.NewFake(epoch)
	ctx := context.Background()
	q, err := quick.Open(ctx, raw, space, quick.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	fq, err := quick.Open(ctx, faulty, space, quick.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	id := q.NewID()
	// The first commit applies and reports 1021; the caller's loop retries.
	tr, _ := faulty.CreateTransaction()
	attempts := 0
	err = kv.Retry(ctx, tr, func(tr kv.Transaction) error {
		attempts++
		if attempts == 2 {
			// Between the attempts a worker ran the job to completion.
			faulty.SetEnabled(false)
			l, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w"})
			if err != nil || len(l.Jobs) != 1 {
				t.Fatalf("claim between retries: %+v %v", l, err)
			}
			if err := q.Complete(ctx, l.Jobs[0]); err != nil {
				t.Fatal(err)
			}
		}
		res, err := fq.EnqueueTx(tr, quick.NewJob{ID: id, TaskType: "email"})
		if err != nil {
			return err
		}
		if attempts == 2 && !res[0].Duplicate {
			t.Errorf("the retry created a second job")
		}
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("err=%v attempts=%d", err, attempts)
	}
	if got, _ := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w"}); len(got.Jobs) != 0 {
		t.Fatalf("a second job exists: %+v", got.Jobs)
	}
}

func TestEnqueueTxRolledBackLeavesNoJob(t *testing.T) {
	e := newEnv(t, quick.Options{})
	boom := errors.New("application says no")
	err := e.q.DB().Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Set(e.q.Subspace().Pack([]any{"app", "order-1"}), []byte("paid"))
		if _, err := e.q.EnqueueTx(tr, quick.NewJob{TaskType: "email"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if got := e.claim(t, "w", 10); len(got) != 0 {
		t.Fatalf("rolled-back transaction left a job: %+v", got)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	e := newEnv(t, quick.Options{})
	cases := []struct {
		job  quick.NewJob
		want error
	}{
		{quick.NewJob{TaskType: ""}, quick.ErrInvalidTaskType},
		{quick.NewJob{TaskType: strings.Repeat("t", 200)}, quick.ErrInvalidTaskType},
		{quick.NewJob{TaskType: "email", Payload: make([]byte, quick.MaxPayloadSize+1)}, quick.ErrPayloadTooLarge},
		{quick.NewJob{TaskType: "email", Delay: -time.Second}, quick.ErrInvalidDelay},
		{quick.NewJob{TaskType: "email", Delay: time.Second, RunAt: epoch}, quick.ErrInvalidDelay},
		{quick.NewJob{TaskType: "email", Priority: 9}, quick.ErrInvalidPriority},
		{quick.NewJob{TaskType: "email", ID: quick.ID{1, 2, 3}}, quick.ErrInvalidID},
		{quick.NewJob{TaskType: "email", ID: quick.NewID(epoch.Add(-time.Hour))}, quick.ErrInvalidID},
		{quick.NewJob{TaskType: "email", MaxAttempts: -1}, quick.ErrInvalidOption},
	}
	before := e.db.Stats()
	for _, c := range cases {
		// A valid job first: nothing of the batch may be written.
		_, err := e.q.Enqueue(e.ctx, quick.NewJob{TaskType: "email"}, c.job)
		if !errors.Is(err, c.want) {
			t.Errorf("enqueue %+v: %v, want %v", c.job, err, c.want)
		}
	}
	if d := e.db.Stats().Sub(before); d.Mutations != 0 || d.Commits != 0 {
		t.Fatalf("bad input wrote: %v", d)
	}
	_, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Second})
	if !errors.Is(err, quick.ErrInvalidLease) {
		t.Fatalf("short lease: %v", err)
	}
	_, err = e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Peek: -1})
	if !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("negative Peek: %v", err)
	}
}

func TestCancelListAndDepth(t *testing.T) {
	e := newEnv(t, quick.Options{ZoneLanes: 4})
	var jobs []quick.NewJob
	for i := 0; i < 20; i++ {
		jobs = append(jobs, quick.NewJob{TaskType: "email", Payload: []byte(fmt.Sprint(i)), ItemSpace: fmt.Sprint("t", i%3)})
	}
	for i := 0; i < 5; i++ {
		jobs = append(jobs, quick.NewJob{TaskType: "email", Delay: time.Hour})
	}
	res := e.enqueue(t, jobs...)
	ls := e.claimZones(t, "w", 3)
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Ready != 17 || d.Leased != 3 || d.Scheduled != 5 || !d.Exact {
		t.Fatalf("depth %+v, want 17 ready, 3 leased, 5 scheduled, exact", d)
	}
	page, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", State: quick.StateLeased})
	if err != nil || len(page.Jobs) != 3 {
		t.Fatalf("list leased: %d %v", len(page.Jobs), err)
	}
	// Paging visits every job once.
	seen := map[quick.ID]bool{}
	var after quick.Cursor
	for {
		p, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", Limit: 4, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			if seen[j.ID] {
				t.Fatalf("job %s listed twice", j.ID)
			}
			seen[j.ID] = true
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if len(seen) != 25 {
		t.Fatalf("paged listing saw %d jobs, want 25", len(seen))
	}
	// Cancel a leased job: its holder loses the lease.
	if err := e.q.Cancel(e.ctx, ls[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Complete(e.ctx, ls[0]); !quick.IsLeaseLost(err) {
		t.Fatalf("complete after cancel: %v", err)
	}
	// Cancel a scheduled job by ID.
	if err := e.q.Cancel(e.ctx, res[24].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Cancel(e.ctx, quick.NewID(epoch)); !quick.IsNotFound(err) {
		t.Fatalf("cancel unknown: %v", err)
	}
	types, err := e.q.TaskTypes(e.ctx)
	if err != nil || len(types) != 1 || types[0] != "email" {
		t.Fatalf("task types %v %v", types, err)
	}
}

func TestGetFindsLeasedJobAfterMoves(t *testing.T) {
	e := newEnv(t, quick.Options{})
	id := e.enqueue(t, quick.NewJob{TaskType: "email"})[0].ID
	l := e.claim(t, "w", 1)[0]
	for i := 0; i < 3; i++ {
		e.clk.Advance(20 * time.Second)
		var err error
		if l, err = e.q.Extend(e.ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	info, err := e.q.Get(e.ctx, id)
	if err != nil || info.State != quick.StateLeased || info.Lane != l.Lane() || !info.RunAt.Equal(l.Deadline) {
		t.Fatalf("Get = %+v, %v; lease lane %d deadline %v", info, err, l.Lane(), l.Deadline)
	}
	e.clk.Advance(2 * time.Minute) // lapsed, not reclaimed
	info, err = e.q.Get(e.ctx, id)
	if err != nil || info.State != quick.StateReady {
		t.Fatalf("Get after lapse = %+v, %v", info, err)
	}
}

func TestPurgeMarkersAndDead(t *testing.T) {
	e := newEnv(t, quick.Options{IdempotencyWindow: time.Hour})
	id := e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 1})[0].ID
	l := e.claim(t, "w", 1)[0]
	if err := e.q.Fail(e.ctx, l, "boom"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Hour)
	if err := e.q.PurgeMarkers(e.ctx); err != nil {
		t.Fatal(err)
	}
	n, err := e.q.PurgeDead(e.ctx, "email", quick.Retention{MaxAge: time.Hour}, 0)
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if _, err := e.q.Get(e.ctx, id); !quick.IsNotFound(err) {
		t.Fatalf("Get after purge: %v", err)
	}
	if c, _ := e.q.DeadCount(e.ctx, "email"); c != 0 {
		t.Fatalf("dead count %d", c)
	}
}

func TestPoisonJobDeadLetteredAfterCrashes(t *testing.T) {
	e := newEnv(t, quick.Options{})
	e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 2})
	for i := 0; i < 2; i++ {
		if got := e.claim(t, "w", 1); len(got) != 1 {
			t.Fatalf("round %d claimed %d", i, len(got))
		}
		e.clk.Advance(2 * time.Minute) // the holder crashed
	}
	res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
	if err != nil || len(res.Jobs) != 0 || res.DeadLettered != 1 {
		t.Fatalf("claim of an exhausted job: %+v %v", res, err)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	e := newEnv(t, quick.Options{})
	if _, err := e.q.Insert(e.ctx, emailArgs{To: "a@b.c"}, nil); err != nil {
		t.Fatal(err)
	}
	l := e.claim(t, "w", 1)[0]
	got, err := quick.DecodeArgs[emailArgs](l.Payload)
	if err != nil || got.To != "a@b.c" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if _, err := quick.DecodeArgs[emailArgs]([]byte("{garbage")); err == nil {
		t.Fatal("garbage decoded")
	}
}

type emailArgs struct {
	To string `json:"to"`
}

func (emailArgs) Kind() string { return "email" }

// finished reports whether Get said a job finished: StateFinished, or not
// found (a completed job leaves no key behind; only a waitable one leaves
// its outcome).
func finished(info quick.JobInfo, err error) bool {
	return err == nil && info.State == quick.StateFinished || quick.IsNotFound(err)
}
