package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// An enqueue in the worker's own process wakes its sleeping scanner with
// no watch: on a database whose watches never fire, the job starts without
// the clock moving (the idle sleep would end only 10 s later). The
// deliberate break worker.no-local-wake leaves the scanner to its watch.
func TestLocalEnqueueWakesTheScannerWithoutTheWatch(t *testing.T) {
	raw, space := fdbtest.OpenMem(t, memkv.Options{})
	e := newEnvOn(t, &deafDB{Database: raw}, space, zonesOptions())
	var done atomic.Int64
	w := e.newWorker(Config{MaxIdleSleep: 10 * time.Second}, func(w *Worker) {
		if err := RegisterRaw(w, "wake", func(context.Context, *RawJob) error {
			done.Add(1)
			return nil
		}, HandlerOptions{Concurrency: 2}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.settle(w)
	e.step(time.Minute, time.Second, w) // into long, registered sleeps
	for round := range 3 {
		before := w.Stats().Wakeups
		e.enqueue(quick.NewJob{TaskType: "wake"})
		e.waitFor("the job to run with the clock still", func() bool { return done.Load() == int64(round+1) })
		if w.Stats().Wakeups == before {
			t.Fatalf("round %d: the job ran without a wake-up", round)
		}
		e.settle(w)
		e.step(15*time.Second, time.Second, w) // asleep again, registered
	}
}

// deafDB is a database whose watches never fire (they wait until
// cancelled or their context ends).
type deafDB struct{ kv.Database }

func (d *deafDB) Unwrap() kv.Database { return d.Database }

func (d *deafDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return deafTx{tr}, nil
}

func (d *deafDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *deafDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

type deafTx struct{ kv.Transaction }

func (deafTx) Watch([]byte) kv.Watch { return &deafWatch{done: make(chan struct{})} }

type deafWatch struct {
	once sync.Once
	done chan struct{}
}

func (w *deafWatch) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return kv.ErrOperationCancelled
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *deafWatch) Cancel() { w.once.Do(func() { close(w.done) }) }
