package worker

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// gatedAck holds, once armed, the next commit of a transaction that wrote a
// key holding Mark (a job's ID: only that job's own operations write such
// keys), until Release is closed. Entered is closed when it holds one.
type gatedAck struct {
	kv.Database
	Mark    []byte
	Entered chan struct{}
	Release chan struct{}
	armed   atomic.Bool
}

func (d *gatedAck) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &gatedAckTx{Transaction: tr, db: d}, nil
}

func (d *gatedAck) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type gatedAckTx struct {
	kv.Transaction
	db  *gatedAck
	hit bool
}

func (t *gatedAckTx) note(k []byte) {
	if len(t.db.Mark) > 0 && bytes.Contains(k, t.db.Mark) {
		t.hit = true
	}
}

func (t *gatedAckTx) Set(k, v []byte) { t.note(k); t.Transaction.Set(k, v) }
func (t *gatedAckTx) Clear(k []byte)  { t.note(k); t.Transaction.Clear(k) }

func (t *gatedAckTx) OnError(err error) error {
	t.hit = false
	return t.Transaction.OnError(err)
}

func (t *gatedAckTx) Commit() error {
	if t.hit && t.db.armed.CompareAndSwap(true, false) {
		close(t.db.Entered)
		<-t.db.Release
	}
	return t.Transaction.Commit()
}

// Stats count a run's outcome once its ack has committed, as events are
// sent: while the acker's (or CompleteWith's) commit is held, Completed and
// Failed have not moved; once it commits, they have.
func TestStatsCountAfterTheAckCommits(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		with bool // finish with CompleteWith instead of the acker
		want func(Stats) int64
	}{
		{"completed", nil, false, func(s Stats) int64 { return s.Completed }},
		{"failed", errors.New("boom"), false, func(s Stats) int64 { return s.Failed }},
		{"CompleteWith", nil, true, func(s Stats) int64 { return s.Completed }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, space := fdbtest.OpenMem(t, memkv.Options{})
			db := &gatedAck{Database: raw, Entered: make(chan struct{}), Release: make(chan struct{})}
			e := newEnvOn(t, db, space, zonesOptions())
			w := e.newWorker(Config{}, func(w *Worker) {
				if err := RegisterRaw(w, "t", func(ctx context.Context, j *RawJob) error {
					db.armed.Store(true) // the next commit of the job's keys is its ack
					if tc.with {
						return j.CompleteWith(ctx, nil)
					}
					return tc.err
				}, HandlerOptions{MaxAttempts: 5}); err != nil {
					t.Fatal(err)
				}
			})
			res := e.enqueue(quick.NewJob{TaskType: "t"})
			db.Mark = res[0].ID[:] // before any transaction of the worker reads it
			e.start(w)
			select {
			case <-db.Entered:
			case <-time.After(waitLimit):
				t.Fatal("the ack's commit never came")
			}
			if s := w.Stats(); s.Completed != 0 || s.Failed != 0 {
				close(db.Release)
				t.Fatalf("stats while the ack's commit is held: %+v, want Completed and Failed 0 until it commits", s)
			}
			close(db.Release)
			e.waitFor("the outcome counted after the commit", func() bool { return tc.want(w.Stats()) == 1 })
		})
	}
}
