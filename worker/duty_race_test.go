package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// beforeCommitDB runs a hook once, at the next commit of a transaction,
// before it: another client's transaction committed there lands between
// this one's reads and its commit.
type beforeCommitDB struct {
	kv.Database
	mu   sync.Mutex
	hook func()
}

func (d *beforeCommitDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &beforeCommitTx{Transaction: tr, db: d}, nil
}

func (d *beforeCommitDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type beforeCommitTx struct {
	kv.Transaction
	db *beforeCommitDB
}

func (t *beforeCommitTx) Commit() error {
	t.db.mu.Lock()
	h := t.db.hook
	t.db.hook = nil
	t.db.mu.Unlock()
	if h != nil {
		h()
	}
	return t.Transaction.Commit()
}

// Two workers taking one due duty at once: the one whose transaction read
// the record first and commits second must conflict and find it held. The
// race is made deterministic: worker b takes the duty between worker a's
// read of the record and a's commit. With a snapshot read of the record
// both took it (two passes at once); the three-worker test caught that 1
// run in 15.
func TestTakeDutyReadsTheRecordSerializably(t *testing.T) {
	e := newEnv(t, quick.Options{})
	hooked := &beforeCommitDB{Database: e.raw}
	ea := newEnvWith(t, hooked, e.space, e.clk, quick.Options{})
	mk := func(env *env, id string) *Worker {
		return env.newWorker(Config{ID: id, NoBuiltinDuties: true}, func(w *Worker) {
			if err := RegisterRaw(w, "duty", noopRaw, HandlerOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := mk(ea, "a"), mk(e, "b")
	d := Duty{Name: "count", Every: time.Minute, Run: func(context.Context) (DutyReport, error) { return DutyReport{}, nil }}
	var bTook bool
	hooked.hook = func() {
		var err error
		if bTook, _, err = b.takeDuty(e.ctx, d); err != nil {
			t.Errorf("b's take: %v", err)
		}
	}
	aTook, _, err := a.takeDuty(e.ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if !bTook {
		t.Fatal("b, committing first, did not take the due duty")
	}
	if aTook {
		t.Fatal("a and b both took the duty: a's read of its record did not conflict with b's take")
	}
}
