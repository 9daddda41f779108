// Command readme is the README's code. Every Go snippet in README.md is a
// region of this file, between a "readme:begin NAME" and a "readme:end"
// comment line; main_test.go checks that the README quotes these regions
// exactly and runs each of them, so the README's code always compiles and
// does what the README says.
//
// As a program it is the README's worker binary for one task type, for
// FoundationDB only (a production worker refuses -embedded; main_test.go
// runs the same setup on the in-memory engine):
//
//	go run -tags fdb ./examples/readme -cluster-file /etc/foundationdb/fdb.cluster
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
	"github.com/quickfdb/quickfdb/workermain"
)

// readme:begin args
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// readme:end

// openFDB opens FoundationDB the way the README does.
func openFDB() (kv.Database, error) {
	// readme:begin open
	db, err := fdbkv.Open("") // "" is FDB's default cluster file; needs a build with -tags fdb
	// readme:end
	return db, err
}

// openOnFDB is the README's queue on the application's own fdb.Database,
// and enqueueInFDBTx the body of its own
// fdbDB.Transact(func(tr fdb.Transaction) (any, error) {...}). They take
// any, as fdbkv's entry points do, so this file compiles without the fdb
// build tag (and the binding's cgo).
func openOnFDB(ctx context.Context, fdbDB any) (*quick.Queue, error) {
	// readme:begin fdbopen
	q, err := quick.Open(ctx, fdbkv.FromDatabase(fdbDB), tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	// readme:end
	return q, err
}

func enqueueInFDBTx(q *quick.Queue, tr any) (any, error) {
	// readme:begin fdbtx
	ktr, err := fdbkv.FromTransaction(tr) // tr is your fdb.Transaction
	if err != nil {
		return nil, err
	}
	_, err = q.InsertTx(ktr, SendEmail{To: "ada@example.com", Subject: "Welcome"}, nil)
	return nil, err
	// readme:end
}

// openRetaining is the README's retention: completed and cancelled
// send_email jobs are kept a day.
func openRetaining(ctx context.Context, db kv.Database, space tuple.Subspace) (*quick.Queue, error) {
	// readme:begin retention
	q, err := quick.Open(ctx, db, space, quick.Options{
		TaskTypes: map[string]quick.TaskTypeOptions{"send_email": {Retain: 24 * time.Hour}},
	})
	// per job: quick.NewJob{..., Retain: time.Hour}, or InsertOpts{Retain: -1} to keep none
	// readme:end
	return q, err
}

// limitInvoices is the README's tenant limits: a default for every tenant
// of "invoice", and an override for acme.
func limitInvoices(ctx context.Context, q *quick.Queue) error {
	// readme:begin limits
	// Every tenant: at most 20 "invoice" jobs running at once.
	if err := q.SetTypeLimits(ctx, "invoice", quick.Limits{Concurrency: 20}); err != nil {
		return err
	}
	// acme: at most 2 running, 10 starts a second (bursts of 5), and three
	// times the others' share of the claims when the task type is busy.
	return q.SetTenantLimits(ctx, "invoice", "acme", quick.Limits{Concurrency: 2, Rate: 10, Burst: 5, Weight: 3})
	// readme:end
}

// moveAcme is the README's move: tenant acme's jobs go to the same queue
// on another cluster while workers run on both.
func moveAcme(ctx context.Context, q *quick.Queue, other kv.Database) error {
	// readme:begin move
	// The destination: the queue as the other cluster holds it (for another
	// subspace of this database: a handle whose Options.ZoneSpace names it).
	to, err := quick.Open(ctx, other, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		return err
	}
	// Fenced, copied in batches, made claimable there, deleted here. After
	// a crash, the same call carries on where the move was.
	res, err := q.MoveTenant(ctx, "acme", to, quick.MoveOptions{})
	if err != nil {
		return err
	}
	log.Printf("moved %d jobs of acme", res.Jobs)
	// readme:end
	return nil
}

// signUp is the README's enqueue: the user's row and the welcome email's
// job commit in one transaction, or neither does. The job belongs to the
// user's tenant: each tenant's jobs are a queue of their own (a zone).
func signUp(ctx context.Context, db kv.Database, tenant string, userKey, userValue []byte) error {
	// readme:begin enqueue
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		return err
	}
	id := q.NewID() // once, outside the retry loop: makes a retry after 1021 safe
	return db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(userKey, userValue)
		// ItemSpace is the tenant: a tenant with a million jobs never delays
		// another's.
		_, err := q.InsertTx(tr, SendEmail{To: "ada@example.com", Subject: "Welcome"}, &quick.InsertOpts{ID: id, ItemSpace: tenant})
		return err
	})
	// readme:end
}

// invoiceForTenant is the README's tenants section: each tenant's zones
// kept inside the tenant's own subspace, and a job enqueued for tenant
// "acme" in the application's transaction.
func invoiceForTenant(ctx context.Context, db kv.Database, space, tenants tuple.Subspace) (*quick.Queue, error) {
	// readme:begin zones
	q, err := quick.Open(ctx, db, space, quick.Options{
		ZoneSpace: func(tenant string) tuple.Subspace { return tenants.Sub(tenant, "jobs") },
		TaskTypes: map[string]quick.TaskTypeOptions{
			"thumbnail": {ShortJobs: true}, // lease the lane, not each job
			"audit":     {Untracked: true}, // no lookup index: not findable by ID until it is dead
		},
	})
	if err != nil {
		return nil, err
	}
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		// The tenant is the job's item space.
		_, err := q.EnqueueTx(tr, quick.NewJob{TaskType: "invoice", ItemSpace: "acme", Payload: []byte(`{"order":42}`)})
		return err
	})
	// readme:end
	return q, err
}

// send stands for the application's mail client.
var send = func(ctx context.Context, to, subject string) error {
	fmt.Printf("sent %q to %s\n", subject, to)
	return nil
}

// runWorker is the README's worker with a typed handler.
func runWorker(ctx context.Context, q *quick.Queue) error {
	// readme:begin worker
	w, err := worker.New(worker.Config{Queue: q})
	if err != nil {
		return err
	}
	err = worker.Register(w, func(ctx context.Context, job *worker.Job[SendEmail]) error {
		return send(ctx, job.Args.To, job.Args.Subject) // an error retries with backoff
	}, worker.HandlerOptions{Concurrency: 20})
	if err != nil {
		return err
	}
	return w.Run(ctx) // until ctx is done; then finishes or releases its jobs
	// readme:end
}

// logFailures is the README's event subscriber: it logs the jobs w fails
// or dead-letters until stop is called or w.Run returns.
func logFailures(w *worker.Worker) (stop func()) {
	// readme:begin events
	events, cancel := w.Subscribe(worker.EventFailed, worker.EventDeadLettered)
	go func() {
		for ev := range events { // closed by cancel(), or when w.Run returns
			log.Printf("%s %s attempt %d: %s", ev.Kind, ev.ID, ev.Attempt, ev.Error)
		}
	}()
	// readme:end
	return cancel
}

func sendEmail(ctx context.Context, job *worker.Job[SendEmail]) error {
	return send(ctx, job.Args.To, job.Args.Subject)
}

// readme:begin main
func main() {
	workermain.Main(setup)
}

func setup(w *worker.Worker) error {
	return worker.Register(w, sendEmail, worker.HandlerOptions{Concurrency: 20})
}

// readme:end
