package quick_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Retention of finished jobs and the cancelled state (issue 26).

func retainOpts(d time.Duration) quick.Options {
	return quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"email": {Retain: d}}}
}

// finishedKeys counts the keys under S (1, "f") and S (1, "fx").
func (e *env) finishedKeys(t testing.TB) (records, expiries int) {
	t.Helper()
	count := func(s tuple.Subspace) int {
		var n int
		err := e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
			b, end := s.Range()
			kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: end}, kv.RangeOptions{}).GetSliceWithError()
			n = len(kvs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	root := e.q.Subspace().Sub(int64(1))
	return count(root.Sub("f")), count(root.Sub("fx"))
}

func (e *env) purgeFinished(t testing.TB, limit int) quick.FinishedPurge {
	t.Helper()
	p, err := e.q.PurgeFinished(e.ctx, limit)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A retained job that failed once then completed is kept, with its
// attempts, error and times, until its retention ends; then the purge
// deletes it, and not a moment before.
func TestRetainedJobIsKeptThenPurged(t *testing.T) {
	e := newEnv(t, retainOpts(time.Hour))
	id := e.enqueue(t, quick.NewJob{TaskType: "email", Payload: []byte("hello")})[0].ID
	l := e.claim(t, "w1", 1)[0]
	if err := e.q.Fail(e.ctx, l, "smtp down"); err != nil {
		t.Fatal(err)
	}
	if info, err := e.q.Get(e.ctx, id); err != nil || len(info.Errors) != 1 || info.Errors[0].Error != "smtp down" {
		t.Fatalf("failed job %+v, %v: want its error in Errors", info, err)
	}
	e.clk.Advance(time.Minute)
	l = e.claim(t, "w1", 1)[0]
	startedAt := e.clk.Now()
	e.clk.Advance(time.Second)
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	finishedAt := e.clk.Now()
	info, err := e.q.Get(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != quick.StateCompleted || info.Attempt != 2 || info.TaskType != "email" || string(info.Payload) != "hello" ||
		info.PayloadSize != 5 || info.LastError != "smtp down" || len(info.Errors) != 1 || info.Errors[0].Attempt != 1 ||
		!info.Errors[0].At.Equal(epoch) || !info.StartedAt.Equal(startedAt) || !info.FinishedAt.Equal(finishedAt) ||
		!info.ExpiresAt.Equal(finishedAt.Add(time.Hour)) || !info.CreatedAt.Equal(epoch) {
		t.Fatalf("completed job %+v", info)
	}
	if o, err := e.q.Outcome(e.ctx, id); err != nil || o.Kind != quick.OutcomeCompleted || o.Attempts != 2 {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if err := e.q.Cancel(e.ctx, id); !quick.IsNotFound(err) {
		t.Fatalf("cancel of a completed job: %v, want not found", err)
	}
	// Not yet expired: the purge keeps it.
	e.clk.Advance(time.Hour - time.Millisecond)
	if p := e.purgeFinished(t, 0); p.Purged != 0 || p.Quarantined != 0 {
		t.Fatalf("purge before expiry: %+v", p)
	}
	if info, err := e.q.Get(e.ctx, id); err != nil || info.State != quick.StateCompleted {
		t.Fatalf("after an early purge: %+v, %v", info, err)
	}
	e.clk.Advance(time.Millisecond)
	if p := e.purgeFinished(t, 0); p.Purged != 1 || p.More {
		t.Fatalf("purge at expiry: %+v", p)
	}
	if _, err := e.q.Get(e.ctx, id); !quick.IsNotFound(err) {
		t.Fatalf("get after the purge: %v, want not found", err)
	}
	if r, x := e.finishedKeys(t); r != 0 || x != 0 {
		t.Fatalf("%d records and %d expiry entries left", r, x)
	}
}

// A job without retention writes no finished record, whatever way it ends.
func TestJobWithoutRetentionKeepsNothing(t *testing.T) {
	e := newEnv(t, quick.Options{})
	res := e.enqueue(t, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "email"})
	ls := e.claim(t, "w1", 2)
	if _, err := e.q.Ack(e.ctx, quick.Ack{Lease: ls[0], Kind: quick.AckComplete}, quick.Ack{Lease: ls[1], Kind: quick.AckCancel, Error: "no"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.ID != ls[0].ID && r.ID != ls[1].ID {
			if err := e.q.Cancel(e.ctx, r.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r, x := e.finishedKeys(t); r != 0 || x != 0 {
		t.Fatalf("%d records and %d expiry entries written", r, x)
	}
	for _, r := range res {
		if _, err := e.q.Get(e.ctx, r.ID); !quick.IsNotFound(err) {
			t.Fatalf("get %s: %v, want not found", r.ID, err)
		}
	}
}

// NewJob.Retain overrides the task type's retention either way.
func TestPerJobRetainOverridesTheTaskType(t *testing.T) {
	for _, c := range []struct {
		name       string
		typeRetain time.Duration
		jobRetain  time.Duration
		kept       time.Duration
	}{
		{"job keeps, type does not", 0, 2 * time.Hour, 2 * time.Hour},
		{"type keeps, job does not", time.Hour, -1, 0},
		{"job keeps longer", time.Hour, 3 * time.Hour, 3 * time.Hour},
		{"type keeps", time.Hour, 0, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, retainOpts(c.typeRetain))
			id := e.enqueue(t, quick.NewJob{TaskType: "email", Retain: c.jobRetain})[0].ID
			if err := e.q.Complete(e.ctx, e.claim(t, "w1", 1)[0]); err != nil {
				t.Fatal(err)
			}
			info, err := e.q.Get(e.ctx, id)
			switch {
			case c.kept == 0 && !quick.IsNotFound(err):
				t.Fatalf("get: %+v, %v; want not found", info, err)
			case c.kept > 0 && (err != nil || info.State != quick.StateCompleted || !info.ExpiresAt.Equal(e.clk.Now().Add(c.kept))):
				t.Fatalf("get: %+v, %v; want completed, kept %v", info, err, c.kept)
			}
		})
	}
	e := newEnv(t, quick.Options{})
	if _, err := e.q.Enqueue(e.ctx, quick.NewJob{TaskType: "email", Retain: quick.MaxRetain + time.Hour}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("retention over MaxRetain: %v", err)
	}
}

// A retained job keeps the errors of its last 5 failed attempts, each cut
// to 2,000 bytes.
func TestRetainedErrorsAreBounded(t *testing.T) {
	e := newEnv(t, retainOpts(time.Hour))
	id := e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 20})[0].ID
	long := strings.Repeat("x", 5000)
	for i := 1; i <= 8; i++ {
		l := e.claim(t, "w1", 1)[0]
		if err := e.q.Fail(e.ctx, l, long); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Hour)
	}
	if err := e.q.Complete(e.ctx, e.claim(t, "w1", 1)[0]); err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Attempt != 9 || len(info.Errors) != 5 {
		t.Fatalf("completed job: attempt %d, %d errors; want 9 and 5", info.Attempt, len(info.Errors))
	}
	for i, ae := range info.Errors {
		if ae.Attempt != 4+i || len(ae.Error) != 2000 {
			t.Fatalf("error %d: attempt %d, %d bytes; want attempt %d, 2000 bytes", i, ae.Attempt, len(ae.Error), 4+i)
		}
	}
}

// Cancelling puts a job in a state of its own, never the dead letters:
// Cancel by ID, a consumer's AckCancel and CancelMatching alike. With
// retention it is kept as cancelled; a waiter learns it was cancelled.
func TestCancelledIsNotADeadLetter(t *testing.T) {
	e := newEnv(t, retainOpts(time.Hour))
	res := e.enqueue(t,
		quick.NewJob{TaskType: "email", Waitable: true},
		quick.NewJob{TaskType: "email", Payload: []byte("by ack")},
		quick.NewJob{TaskType: "email", Payload: []byte("by filter"), Delay: time.Hour},
	)
	if err := e.q.Cancel(e.ctx, res[0].ID); err != nil {
		t.Fatal(err)
	}
	ls := e.claim(t, "w1", 1)
	if len(ls) != 1 || ls[0].ID != res[1].ID {
		t.Fatalf("claimed %+v", ls)
	}
	if _, err := e.q.Ack(e.ctx, quick.Ack{Lease: ls[0], Kind: quick.AckCancel, Error: "unwanted"}); err != nil {
		t.Fatal(err)
	}
	br, err := e.q.CancelMatching(e.ctx, quick.Filter{TaskType: "email"}, quick.BulkOptions{})
	if err != nil || br.Done != 1 {
		t.Fatalf("cancel matching: %+v, %v", br, err)
	}
	if n, err := e.q.DeadCount(e.ctx, "email"); err != nil || n != 0 {
		t.Fatalf("dead count %d, %v; want 0", n, err)
	}
	want := []struct {
		reason  string
		payload string
	}{{"", ""}, {"unwanted", "by ack"}, {"", "by filter"}}
	for i, r := range res {
		info, err := e.q.Get(e.ctx, r.ID)
		if err != nil || info.State != quick.StateCancelled || info.LastError != want[i].reason || string(info.Payload) != want[i].payload {
			t.Fatalf("job %d: %+v, %v; want cancelled", i, info, err)
		}
		if o, err := e.q.Outcome(e.ctx, r.ID); err != nil || o.Kind != quick.OutcomeCancelled {
			t.Fatalf("job %d outcome %+v, %v", i, o, err)
		}
	}
	if o, err := e.q.Wait(e.ctx, res[0].ID); err != nil || o.Kind != quick.OutcomeCancelled {
		t.Fatalf("wait: %+v, %v", o, err)
	}
	if err := e.q.Cancel(e.ctx, res[0].ID); !quick.IsNotFound(err) {
		t.Fatalf("second cancel: %v, want not found", err)
	}
}

// A dead letter that is cancelled leaves the dead letters for a cancelled
// record that keeps its errors.
func TestCancelledDeadLetterIsRetained(t *testing.T) {
	e := newEnv(t, retainOpts(time.Hour))
	id := e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 2, Payload: []byte("p")})[0].ID
	for range 2 {
		if err := e.q.Fail(e.ctx, e.claim(t, "w1", 1)[0], "bounce"); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Hour)
	}
	if info, err := e.q.Get(e.ctx, id); err != nil || info.State != quick.StateDead || len(info.Errors) != 2 {
		t.Fatalf("dead letter %+v, %v; want dead with 2 errors", info, err)
	}
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, id)
	if err != nil || info.State != quick.StateCancelled || info.Attempt != 2 || len(info.Errors) != 2 || string(info.Payload) != "p" {
		t.Fatalf("cancelled dead letter %+v, %v", info, err)
	}
	if n, err := e.q.DeadCount(e.ctx, "email"); err != nil || n != 0 {
		t.Fatalf("dead count %d, %v", n, err)
	}
}

// One purge call stops at its limit, in transactions of at most 500
// records, and says there is more.
func TestPurgeFinishedIsBounded(t *testing.T) {
	e := newEnv(t, retainOpts(time.Minute))
	const n = 1200
	jobs := make([]quick.NewJob, n)
	for i := range jobs {
		jobs[i] = quick.NewJob{TaskType: "email"}
	}
	e.enqueue(t, jobs...)
	for done := 0; done < n; {
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1000, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		acks := make([]quick.Ack, len(res.Jobs))
		for i, l := range res.Jobs {
			acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
		}
		if _, err := e.q.Ack(e.ctx, acks...); err != nil {
			t.Fatal(err)
		}
		done += len(res.Jobs)
	}
	e.clk.Advance(time.Minute)
	s0 := e.db.Stats()
	p := e.purgeFinished(t, 700)
	if p.Purged != 700 || !p.More {
		t.Fatalf("first purge %+v, want 700 and more", p)
	}
	if c := e.db.Stats().Sub(s0).Commits; c != 2 {
		t.Fatalf("first purge made %d commits, want 2 (500 + 200)", c)
	}
	if p := e.purgeFinished(t, 0); p.Purged != n-700 || p.More {
		t.Fatalf("second purge %+v", p)
	}
	if r, x := e.finishedKeys(t); r != 0 || x != 0 {
		t.Fatalf("%d records and %d expiry entries left", r, x)
	}
}

// A finished record or expiry entry that does not decode goes to the
// quarantine, counted, and the purge deletes the records around it.
func TestCorruptFinishedRecordNeverBlocksThePurge(t *testing.T) {
	e := newEnv(t, retainOpts(time.Minute))
	res := e.enqueue(t, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "email"})
	for _, l := range e.claim(t, "w1", 3) {
		if err := e.q.Complete(e.ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	root := e.q.Subspace().Sub(int64(1))
	bad := res[0].ID
	if err := e.db.Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Set(root.Pack(tuple.Tuple{"f", tuple.UUID(bad)}), []byte{0xff, 0xff, 0xff})
		// An expiry entry that names no job, before every other.
		tr.Set(root.Pack(tuple.Tuple{"fx", int64(0), "garbage"}), nil)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Get(e.ctx, bad); !errors.Is(err, quick.ErrCorrupt) {
		t.Fatalf("get of a corrupt record: %v, want ErrCorrupt", err)
	}
	e.clk.Advance(time.Minute)
	p := e.purgeFinished(t, 0)
	if p.Purged != 2 || p.Quarantined != 2 {
		t.Fatalf("purge %+v, want 2 purged and 2 quarantined", p)
	}
	if r, x := e.finishedKeys(t); r != 0 || x != 0 {
		t.Fatalf("%d records and %d expiry entries left", r, x)
	}
	qs, err := e.q.ListQuarantined(e.ctx, 10)
	if err != nil || len(qs) != 2 {
		t.Fatalf("quarantine %d entries, %v; want 2", len(qs), err)
	}
}

// Retention works in short-job mode and for an Untracked task type: the
// finished record is found by ID though the job had no lookup index entry.
func TestRetentionInShortModeAndUntracked(t *testing.T) {
	for _, o := range []quick.TaskTypeOptions{
		{ShortJobs: true, Retain: time.Hour},
		{Untracked: true, Retain: time.Hour},
	} {
		e := newEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"email": o}})
		id := e.enqueue(t, quick.NewJob{TaskType: "email", Payload: []byte("x")})[0].ID
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 1, Lease: time.Minute})
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("%+v: claim %+v, %v", o, res, err)
		}
		if _, err := e.q.Ack(e.ctx, quick.Ack{Lease: res.Jobs[0], Kind: quick.AckComplete}); err != nil {
			t.Fatal(err)
		}
		if res.Lane != nil {
			if err := e.q.Consumer().ReleaseLane(e.ctx, *res.Lane); err != nil {
				t.Fatal(err)
			}
		}
		info, err := e.q.Get(e.ctx, id)
		if err != nil || info.State != quick.StateCompleted || info.Attempt != 1 || string(info.Payload) != "x" {
			t.Fatalf("%+v: %+v, %v", o, info, err)
		}
	}
}
