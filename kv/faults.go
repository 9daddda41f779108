package kv

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Faults configures the commit faults FaultyDB injects. Each probability is
// drawn per commit attempt that carries writes; read-only commits are never
// faulted, as FDB sends them nowhere.
type Faults struct {
	// Seed makes the sequence of faults reproducible.
	Seed uint64
	// UnknownCommitted is the probability that a commit applies and then
	// reports 1021 commit_unknown_result: the case a blind retry duplicates.
	UnknownCommitted float64
	// UnknownNotCommitted is the probability that a commit is dropped and
	// reports 1021.
	UnknownNotCommitted float64
	// Conflict is the probability that a commit is dropped and reports 1020
	// not_committed, a spurious conflict (FDB reports false conflicts on
	// clusters with several resolvers).
	Conflict float64
}

// FaultStats counts the faults injected so far.
type FaultStats struct {
	UnknownCommitted    int64 `json:"unknown_committed"`
	UnknownNotCommitted int64 `json:"unknown_not_committed"`
	Conflicts           int64 `json:"conflicts"`
}

// FaultyDB injects commit faults over any Database, so the same faults can be
// injected over memkv and over a real cluster. Latency is an engine option
// (memkv), since it has to act inside futures.
type FaultyDB struct {
	inner   Database
	cfg     Faults
	mu      sync.Mutex
	rng     *rand.Rand
	enabled atomic.Bool

	unknownCommitted, unknownNotCommitted, conflicts atomic.Int64
}

// WithFaults wraps db so that its commits fail as cfg says.
func WithFaults(db Database, cfg Faults) *FaultyDB {
	f := &FaultyDB{inner: db, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	f.enabled.Store(true)
	return f
}

// SetEnabled turns injection on or off, e.g. to let a checker read the final
// state without faults.
func (f *FaultyDB) SetEnabled(on bool) { f.enabled.Store(on) }

// Stats returns the faults injected so far.
func (f *FaultyDB) Stats() FaultStats {
	return FaultStats{
		UnknownCommitted:    f.unknownCommitted.Load(),
		UnknownNotCommitted: f.unknownNotCommitted.Load(),
		Conflicts:           f.conflicts.Load(),
	}
}

// Unwrap returns the wrapped database.
func (f *FaultyDB) Unwrap() Database { return f.inner }

// CreateTransaction implements Database.
func (f *FaultyDB) CreateTransaction() (Transaction, error) {
	tr, err := f.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &faultyTx{Transaction: tr, db: f}, nil
}

// Transact implements Database.
func (f *FaultyDB) Transact(ctx context.Context, fn func(Transaction) error) error {
	tr, err := f.CreateTransaction()
	if err != nil {
		return err
	}
	return Retry(ctx, tr, fn)
}

// ReadTransact implements Database.
func (f *FaultyDB) ReadTransact(ctx context.Context, fn func(ReadTransaction) error) error {
	tr, err := f.CreateTransaction()
	if err != nil {
		return err
	}
	return RetryRead(ctx, tr, fn)
}

type fault int

const (
	noFault fault = iota
	faultUnknownCommitted
	faultUnknownNotCommitted
	faultConflict
)

func (f *FaultyDB) draw() fault {
	if !f.enabled.Load() {
		return noFault
	}
	f.mu.Lock()
	r := f.rng.Float64()
	f.mu.Unlock()
	switch {
	case r < f.cfg.UnknownCommitted:
		return faultUnknownCommitted
	case r < f.cfg.UnknownCommitted+f.cfg.UnknownNotCommitted:
		return faultUnknownNotCommitted
	case r < f.cfg.UnknownCommitted+f.cfg.UnknownNotCommitted+f.cfg.Conflict:
		return faultConflict
	}
	return noFault
}

// faultyTx tracks whether the attempt writes, so read-only commits pass
// untouched.
type faultyTx struct {
	Transaction
	db     *FaultyDB
	writes bool
}

func (t *faultyTx) Set(key, value []byte) { t.writes = true; t.Transaction.Set(key, value) }
func (t *faultyTx) Clear(key []byte)      { t.writes = true; t.Transaction.Clear(key) }
func (t *faultyTx) ClearRange(r KeyRange) { t.writes = true; t.Transaction.ClearRange(r) }
func (t *faultyTx) Atomic(op MutationType, key, param []byte) {
	t.writes = true
	t.Transaction.Atomic(op, key, param)
}
func (t *faultyTx) Add(key, param []byte) { t.writes = true; t.Transaction.Add(key, param) }
func (t *faultyTx) Max(key, param []byte) { t.writes = true; t.Transaction.Max(key, param) }
func (t *faultyTx) Min(key, param []byte) { t.writes = true; t.Transaction.Min(key, param) }
func (t *faultyTx) CompareAndClear(key, param []byte) {
	t.writes = true
	t.Transaction.CompareAndClear(key, param)
}
func (t *faultyTx) SetVersionstampedKey(key, value []byte) {
	t.writes = true
	t.Transaction.SetVersionstampedKey(key, value)
}
func (t *faultyTx) SetVersionstampedValue(key, value []byte) {
	t.writes = true
	t.Transaction.SetVersionstampedValue(key, value)
}
func (t *faultyTx) AddWriteConflictKey(key []byte) error {
	t.writes = true
	return t.Transaction.AddWriteConflictKey(key)
}
func (t *faultyTx) AddWriteConflictRange(r KeyRange) error {
	t.writes = true
	return t.Transaction.AddWriteConflictRange(r)
}

func (t *faultyTx) Commit() error {
	if !t.writes {
		return t.Transaction.Commit()
	}
	switch t.db.draw() {
	case faultUnknownCommitted:
		if err := t.Transaction.Commit(); err != nil {
			return err
		}
		t.db.unknownCommitted.Add(1)
		return ErrCommitUnknownResult
	case faultUnknownNotCommitted:
		t.db.unknownNotCommitted.Add(1)
		return ErrCommitUnknownResult
	case faultConflict:
		t.db.conflicts.Add(1)
		return ErrNotCommitted
	}
	return t.Transaction.Commit()
}

func (t *faultyTx) OnError(err error) error {
	if rerr := t.Transaction.OnError(err); rerr != nil {
		return rerr
	}
	t.writes = false
	return nil
}

func (t *faultyTx) Reset() {
	t.Transaction.Reset()
	t.writes = false
}
