package quicktest_test

import (
	"context"
	"errors"
	"fmt"
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

type Welcome struct {
	UserID int `json:"user_id"`
}

func (Welcome) Kind() string { return "welcome" }

// exampleTB stands for the *testing.T of a user's test: it prints a
// failure instead of failing.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                  {}
func (exampleTB) Context() context.Context { return context.Background() }
func (exampleTB) Fatalf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
}

// now is the examples' fake time: assertions on scheduled times then do
// not depend on how fast the test runs.
var now = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func openQueue() *quick.Queue {
	q, err := quick.Open(context.Background(), memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"app"}), quick.Options{Clock: clock.NewFake(now)})
	if err != nil {
		panic(err)
	}
	return q
}

// signUp is the code under test: it enqueues a welcome job, high priority,
// due in an hour.
func signUp(ctx context.Context, q *quick.Queue, userID int) error {
	j, err := quick.ArgsJob(Welcome{UserID: userID}, &quick.InsertOpts{Priority: quick.High, Delay: time.Hour})
	if err != nil {
		return err
	}
	_, err = q.Enqueue(ctx, j)
	return err
}

// Assert that the code under test enqueued a job with these args and
// options.
func ExampleRequireEnqueued() {
	var t exampleTB // your test's *testing.T
	q := openQueue()
	if err := signUp(context.Background(), q, 42); err != nil {
		panic(err)
	}
	job := quicktest.RequireEnqueued(t, q, Welcome{UserID: 42}, &quicktest.RequireOpts{
		Priority:    quick.High,
		ScheduledAt: now.Add(time.Hour),
		State:       quick.StateScheduled,
	})
	fmt.Println(job.TaskType, string(job.Payload), job.Priority)
	// Output: welcome {"user_id":42} high
}

// A failure lists what was enqueued of the kind instead.
func ExampleRequireEnqueued_failure() {
	var t exampleTB
	// A fake clock and a fixed ID make the listing below reproducible.
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	q, err := quick.Open(context.Background(), memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"app"}), quick.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	id, _ := quick.ParseID("019de2c4-2a80-7000-8000-000000000001")
	j, _ := quick.ArgsJob(Welcome{UserID: 42}, &quick.InsertOpts{ID: id, Priority: quick.High, Delay: time.Hour, MaxAttempts: 5})
	if _, err := q.Enqueue(context.Background(), j); err != nil {
		panic(err)
	}
	quicktest.RequireEnqueued(t, q, Welcome{UserID: 7}, nil)
	// Output:
	// FAIL: quicktest: no live job of kind "welcome" with args {"user_id":7}
	// live jobs of kind "welcome" (1):
	//   1. id=019de2c4-2a80-7000-8000-000000000001 args={"user_id":42} priority=high item_space="" max_attempts=5 unique_key="" scheduled_at=2026-05-01T10:00:00Z state=scheduled
}

// Assert inside your own transaction, before it commits.
func ExampleRequireEnqueuedTx() {
	var t exampleTB
	q := openQueue()
	ctx := context.Background()
	err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("users/42"), []byte("Ada"))
		if _, err := q.InsertTx(tr, Welcome{UserID: 42}, nil); err != nil {
			return err
		}
		quicktest.RequireEnqueuedTx(t, tr, q, Welcome{UserID: 42}, nil)
		return nil
	})
	fmt.Println(err)
	// Output: <nil>
}

// Assert that no job of the kind was enqueued, whatever its args.
func ExampleRequireNotEnqueued() {
	var t exampleTB
	q := openQueue()
	quicktest.RequireNotEnqueued(t, q, Welcome{}, &quicktest.RequireOpts{AnyArgs: true})
	if err := signUp(context.Background(), q, 1); err != nil {
		panic(err)
	}
	quicktest.RequireNotEnqueued(t, q, Welcome{UserID: 2}, nil)
	fmt.Println("ok")
	// Output: ok
}

// Run a handler synchronously on a new job and see how it ended.
func ExampleWork() {
	var t exampleTB
	q := openQueue()
	ctx := context.Background()
	h := func(ctx context.Context, job *worker.Job[Welcome]) error {
		if job.Args.UserID == 0 {
			return worker.Cancel("no user")
		}
		if job.Lease.Attempt < 2 {
			return errors.New("mail server busy")
		}
		return nil
	}
	res := quicktest.Work(ctx, t, q, h, Welcome{UserID: 42}, nil)
	fmt.Println(res.Event, res.Err, res.Job.State)
	res = quicktest.WorkJob(ctx, t, q, h, res.Job.ID, nil) // its retry, now
	fmt.Println(res.Event, res.Job.State)
	res = quicktest.Work(ctx, t, q, h, Welcome{}, nil)
	fmt.Println(res.Event, res.Job.State, res.Err)
	// Output:
	// failed mail server busy scheduled
	// completed finished
	// cancelled cancelled worker: cancel: no user
}
