package soak

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/quickfdb/quickfdb/kv"
)

// sizeWatch counts the commits that fail with 2101 transaction_too_large:
// every transaction the queue makes must be bounded in bytes whatever the
// payloads, so the soak's large jobs must never produce one. It sits under
// the fault injector, so it sees only the database's own answers.
type sizeWatch struct {
	inner kv.Database
	n     atomic.Int64
}

func (s *sizeWatch) CreateTransaction() (kv.Transaction, error) {
	tr, err := s.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &sizeTx{Transaction: tr, w: s}, nil
}

func (s *sizeWatch) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := s.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (s *sizeWatch) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := s.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

// Unwrap lets fdbkv find the database underneath.
func (s *sizeWatch) Unwrap() kv.Database { return s.inner }

type sizeTx struct {
	kv.Transaction
	w *sizeWatch
}

func (t *sizeTx) Commit() error {
	err := t.Transaction.Commit()
	if errors.Is(err, kv.ErrTransactionTooLarge) {
		t.w.n.Add(1)
	}
	return err
}
