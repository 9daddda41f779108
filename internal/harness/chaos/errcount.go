package chaos

import (
	"context"
	"maps"
	"sync"

	"github.com/quickfdb/quickfdb/kv"
)

// ErrCountDB counts the FDB errors its transactions hand to OnError, by
// code: the retries a recovery causes (1007, 1009, 1021, 1037...), whether
// OnError retried them or not.
type ErrCountDB struct {
	inner kv.Database
	mu    sync.Mutex
	codes map[int]int64
}

// CountErrors wraps db.
func CountErrors(db kv.Database) *ErrCountDB {
	return &ErrCountDB{inner: db, codes: map[int]int64{}}
}

// Codes returns the counts so far.
func (d *ErrCountDB) Codes() map[int]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.codes)
}

func (d *ErrCountDB) note(err error) {
	if c := kv.Code(err); c != 0 {
		d.mu.Lock()
		d.codes[c]++
		d.mu.Unlock()
	}
}

// Unwrap returns the wrapped database.
func (d *ErrCountDB) Unwrap() kv.Database { return d.inner }

// CreateTransaction implements kv.Database.
func (d *ErrCountDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &errCountTx{Transaction: tr, d: d}, nil
}

// Transact implements kv.Database.
func (d *ErrCountDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

// ReadTransact implements kv.Database.
func (d *ErrCountDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

type errCountTx struct {
	kv.Transaction
	d *ErrCountDB
}

func (t *errCountTx) OnError(err error) error {
	t.d.note(err)
	return t.Transaction.OnError(err)
}
