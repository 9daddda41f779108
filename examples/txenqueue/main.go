// Command txenqueue enqueues a job in the same transaction as the
// application's own write, and shows that a transaction rolled back
// leaves neither: no job without its data, no data without its job.
//
// Signing a user up writes the user's record and enqueues their welcome
// email (InsertTx) in one transaction. The job's ID is made once, before
// the transaction, so a retry of it (FDB retries a transaction whose
// commit result is unknown) finds the job its first attempt made instead
// of adding a second. When the application's transaction function
// returns an error, nothing it did commits, the enqueue included.
//
// The scenario signs up ada, then bob, whose sign-up fails after both of
// its writes (a declined payment): ada has a record and a welcome job,
// which a worker runs; bob has neither.
//
//	go run ./examples/txenqueue
//	go run -tags fdb ./examples/txenqueue -cluster-file /etc/foundationdb/fdb.cluster
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/quickfdb/quickfdb/examples/internal/ex"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// Welcome is the job: greet a new user.
type Welcome struct {
	User string `json:"user"`
}

func (Welcome) Kind() string { return "welcome_email" }

var errPaymentDeclined = errors.New("payment declined")

type app struct {
	env   *ex.Env
	users tuple.Subspace

	mu       sync.Mutex
	welcomed []string
}

// signUp stores the user and enqueues their welcome email, in one
// transaction; declined makes the sign-up fail after both writes.
func (a *app) signUp(ctx context.Context, user string, declined bool) (quick.ID, error) {
	id := a.env.Queue.NewID() // once, outside the retry loop
	err := a.env.DB.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(a.users.Pack(tuple.Tuple{user}), []byte(`{"plan":"pro"}`))
		if _, err := a.env.Queue.InsertTx(tr, Welcome{User: user}, &quick.InsertOpts{ID: id}); err != nil {
			return err
		}
		if declined {
			return errPaymentDeclined // rolls back the record and the job
		}
		return nil
	})
	return id, err
}

// welcome is the handler: the user's record exists whenever the job does.
func (a *app) welcome(ctx context.Context, job *worker.Job[Welcome]) error {
	rec, err := a.user(ctx, job.Args.User)
	if err != nil {
		return err
	}
	if rec == nil {
		return worker.Cancel("no such user: the job outlived its data, which InsertTx rules out")
	}
	a.env.Printf("%s: welcome email to %s (record %s)", job.Lease.Holder, job.Args.User, rec)
	a.mu.Lock()
	a.welcomed = append(a.welcomed, job.Args.User)
	a.mu.Unlock()
	return nil
}

func (a *app) user(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := a.env.DB.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(a.users.Pack(tuple.Tuple{name})).Get()
		return err
	})
	return v, err
}

func main() { ex.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := ex.Parse("txenqueue", args, os.Stderr, nil)
	if err != nil {
		return err
	}
	env, err := ex.Open(ctx, f, true, stdout, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	env.Describe(f)
	a := &app{env: env, users: env.App.Sub("users")}

	adaJob, err := a.signUp(ctx, "ada", false)
	if err != nil {
		return err
	}
	env.Printf("app: signed ada up: her record and welcome job %s committed together", ex.Short(adaJob))
	bobJob, err := a.signUp(ctx, "bob", true)
	if !errors.Is(err, errPaymentDeclined) {
		return ex.Check(false, "bob's sign-up returned %v, want %v", err, errPaymentDeclined)
	}
	env.Printf("app: bob's sign-up failed after writing his record and enqueueing job %s: %v", ex.Short(bobJob), err)

	// Bob's transaction left nothing: no record, no job.
	rec, err := a.user(ctx, "bob")
	if err != nil {
		return err
	}
	_, getErr := env.Queue.Get(ctx, bobJob)
	env.Printf("app: bob's record: %v; bob's job: %v", orNone(rec), getErr)
	if err := ex.Check(rec == nil, "bob's record %q survived the rollback", rec); err != nil {
		return err
	}
	if err := ex.Check(quick.IsNotFound(getErr), "bob's job after the rollback: %v, want not found", getErr); err != nil {
		return err
	}
	page, err := env.Queue.List(ctx, quick.ListOptions{TaskType: Welcome{}.Kind()})
	if err != nil {
		return err
	}
	if err := ex.Check(len(page.Jobs) == 1 && page.Jobs[0].ID == adaJob, "queued welcome jobs %v, want only ada's", page.Jobs); err != nil {
		return err
	}
	env.Printf("queue: one welcome job waiting, ada's")

	w, err := env.NewWorker("worker-1")
	if err != nil {
		return err
	}
	if err := worker.Register(w, a.welcome, worker.HandlerOptions{}); err != nil {
		return err
	}
	r := ex.Start(w)
	defer r.Abort() // a no-op once stopped
	if err := env.WaitFor(ctx, "ada's welcome job", func() (bool, error) { return env.JobsGone(ctx, adaJob) }); err != nil {
		return err
	}
	if err := r.Stop(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := ex.Check(len(a.welcomed) == 1 && a.welcomed[0] == "ada", "welcomed %v, want [ada]", a.welcomed); err != nil {
		return err
	}
	env.Printf("OK: ada was welcomed once; bob's rolled-back sign-up left no record and no job")
	return nil
}

func orNone(v []byte) string {
	if v == nil {
		return "none"
	}
	return string(v)
}
