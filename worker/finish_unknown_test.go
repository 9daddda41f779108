package worker

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// applyThenUnknown applies, once armed, the next commit of a transaction
// that set Target and then answers 1021 (commit_unknown_result), as FDB
// does when a commit's reply is lost.
type applyThenUnknown struct {
	kv.Database
	Target []byte
	armed  atomic.Bool
	hits   atomic.Int64
}

func (d *applyThenUnknown) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &applyThenUnknownTx{Transaction: tr, db: d}, nil
}

func (d *applyThenUnknown) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type applyThenUnknownTx struct {
	kv.Transaction
	db  *applyThenUnknown
	hit bool
}

func (t *applyThenUnknownTx) Set(k, v []byte) {
	if bytes.Equal(k, t.db.Target) {
		t.hit = true
	}
	t.Transaction.Set(k, v)
}

func (t *applyThenUnknownTx) Commit() error {
	if !t.hit || !t.db.armed.CompareAndSwap(true, false) {
		return t.Transaction.Commit()
	}
	if err := t.Transaction.Commit(); err != nil {
		return err
	}
	t.db.hits.Add(1)
	return kv.ErrCommitUnknownResult
}

func (t *applyThenUnknownTx) OnError(err error) error {
	t.hit = false
	return t.Transaction.OnError(err)
}

// Issue 22, item 7 (suspected by reading, proven here): a CompleteWith of
// a Trackable zones job whose commit applied but came back 1021 retried,
// found the lease gone and, looking the job up, got ErrNotTrackable (its
// lookup entry went with it): it reported a lost lease for a job it had
// completed. A Trackable job not found is finished.
func TestCompleteWithAppliedThenUnknownOnATrackableJob(t *testing.T) {
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	effect := space.Sub("effect").Pack(nil)
	db := &applyThenUnknown{Database: raw, Target: effect}
	opts := zonesOptions()
	opts.TaskTypes = map[string]quick.TaskTypeOptions{"tx": {}}
	e := newEnvOn(t, db, space, opts)
	done := make(chan error, 1)
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "tx", func(ctx context.Context, j *RawJob) error {
			db.armed.Store(true)
			err := j.CompleteWith(ctx, func(tr kv.Transaction) error {
				tr.Set(effect, []byte("done"))
				return nil
			})
			done <- err
			return err
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "tx", MaxAttempts: 1})
	e.start(w)
	if err := <-done; err != nil {
		t.Fatalf("CompleteWith after its commit applied and returned 1021: %v; want success", err)
	}
	if db.hits.Load() != 1 {
		t.Fatalf("%d commits applied then answered 1021, want 1", db.hits.Load())
	}
	if _, err := e.q.Get(e.ctx, res[0].ID); !quick.IsNotFound(err) {
		t.Fatalf("the job after CompleteWith: %v; want it gone", err)
	}
	e.waitFor("the completion counted", func() bool { return w.Stats().Completed == 1 })
	if s := w.Stats(); s.Failed != 0 || s.DeadLettered != 0 || s.LeaseLost != 0 {
		t.Fatalf("stats %+v", s)
	}
}
