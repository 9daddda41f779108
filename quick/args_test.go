package quick_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// reportArgs declare their kind's default options.
type reportArgs struct {
	N int `json:"n"`
}

func (reportArgs) Kind() string { return "report" }
func (reportArgs) InsertOpts() quick.InsertOpts {
	return quick.InsertOpts{Priority: quick.Low, MaxAttempts: 3, ItemSpace: "reports", Delay: time.Minute}
}

var _ quick.JobArgsWithInsertOpts = reportArgs{}

func TestInsertUsesKindDefaults(t *testing.T) {
	e := newEnv(t, quick.Options{})
	res, err := e.q.Insert(e.ctx, reportArgs{N: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.TaskType != "report" || info.Priority != quick.Low || info.MaxAttempts != 3 || info.ItemSpace != "reports" ||
		!info.RunAt.Equal(epoch.Add(time.Minute)) || string(info.Payload) != `{"n":1}` {
		t.Fatalf("job %+v: want the kind's defaults", info)
	}
}

func TestInsertCallOptionsWinOverDefaults(t *testing.T) {
	e := newEnv(t, quick.Options{})
	at := epoch.Add(time.Hour)
	res, err := e.q.Insert(e.ctx, reportArgs{N: 2}, &quick.InsertOpts{Priority: quick.High, RunAt: at, UniqueKey: "r2", Waitable: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Priority and RunAt from the call (RunAt replaces the default Delay);
	// MaxAttempts and ItemSpace still from the defaults.
	if info.Priority != quick.High || !info.RunAt.Equal(at) || info.UniqueKey != "r2" || !info.Waitable ||
		info.MaxAttempts != 3 || info.ItemSpace != "reports" {
		t.Fatalf("job %+v: want the call's options over the defaults", info)
	}
}

func TestInsertWithoutDefaultsUsesQueueDefaults(t *testing.T) {
	e := newEnv(t, quick.Options{MaxAttempts: 7})
	res, err := e.q.Insert(e.ctx, emailArgs{To: "a@b.c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Priority != quick.Normal || info.MaxAttempts != 7 || !info.RunAt.Equal(epoch) {
		t.Fatalf("job %+v: want the queue's defaults", info)
	}
}

func TestInsertManyTxInOrderAndAtomic(t *testing.T) {
	e := newEnv(t, quick.Options{})
	id := quick.NewID(epoch)
	var res []quick.Enqueued
	err := e.db.Transact(e.ctx, func(tr kv.Transaction) error {
		var err error
		res, err = e.q.InsertManyTx(tr, []quick.InsertManyParams{
			{Args: emailArgs{To: "a@b.c"}, Opts: &quick.InsertOpts{ID: id}},
			{Args: reportArgs{N: 3}},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].ID != id || res[1].ID.IsZero() {
		t.Fatalf("results %+v", res)
	}
	if info, err := e.q.Get(e.ctx, res[1].ID); err != nil || info.TaskType != "report" {
		t.Fatalf("second job %+v %v", info, err)
	}
	// A bad job fails the whole batch, naming it, and enqueues nothing.
	_, err = e.q.InsertMany(e.ctx, []quick.InsertManyParams{
		{Args: emailArgs{To: "x"}},
		{Args: reportArgs{N: 4}, Opts: &quick.InsertOpts{Delay: -time.Second}},
	})
	if !errors.Is(err, quick.ErrInvalidDelay) {
		t.Fatalf("bad batch: %v, want ErrInvalidDelay", err)
	}
	_, err = e.q.InsertMany(e.ctx, []quick.InsertManyParams{{Args: nil}})
	if !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("nil args: %v, want ErrInvalidOption", err)
	}
}

func TestArgsJobKeepsKindAndPayload(t *testing.T) {
	j, err := quick.ArgsJob(reportArgs{N: 5}, &quick.InsertOpts{MaxAttempts: 9})
	if err != nil {
		t.Fatal(err)
	}
	if j.TaskType != "report" || string(j.Payload) != `{"n":5}` || j.MaxAttempts != 9 || j.Priority != quick.Low {
		t.Fatalf("job %+v", j)
	}
}

// Per-task-type policy: MaxAttempts defaults the kind's jobs, Backoff
// spaces its retries; other kinds keep the queue's.
func TestTaskTypePolicy(t *testing.T) {
	e := newEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{
		"email": {MaxAttempts: 2, Backoff: func(int) time.Duration { return 5 * time.Minute }},
	}})
	res := e.enqueue(t, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "other"})
	if info, _ := e.q.Get(e.ctx, res[1].ID); info.MaxAttempts != 25 {
		t.Fatalf("other kind: MaxAttempts %d, want the queue's 25", info.MaxAttempts)
	}
	l := e.claim(t, "w", 1)[0]
	if err := e.q.Fail(e.ctx, l, "boom"); err != nil {
		t.Fatal(err)
	}
	info, err := e.q.Get(e.ctx, l.ID)
	if err != nil || info.MaxAttempts != 2 || !info.RunAt.Equal(epoch.Add(5*time.Minute)) {
		t.Fatalf("after a failure %+v %v: want MaxAttempts 2 and the kind's 5 min backoff", info, err)
	}
	e.clk.Advance(5 * time.Minute)
	l = e.claim(t, "w", 1)[0]
	if err := e.q.Fail(e.ctx, l, "boom"); err != nil {
		t.Fatal(err)
	}
	if info, _ := e.q.Get(e.ctx, l.ID); info.State != quick.StateDead {
		t.Fatalf("after the second failure %+v, want dead-lettered by the kind's MaxAttempts", info)
	}
	if _, err := quick.Open(e.ctx, e.db, e.q.Subspace(), quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"": {}}}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("empty task type: %v, want ErrInvalidOption", err)
	}
}
