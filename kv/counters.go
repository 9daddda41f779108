package kv

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Stats are the operation counts every performance figure of quickfdb is
// stated in. They are the units a FoundationDB cluster pays in, so they carry
// over from the embedded engine to a real cluster.
type Stats struct {
	// ReadVersions counts transaction attempts that took a read version
	// (a GRV round trip): those that read anything or asked for it.
	ReadVersions int64 `json:"read_versions"`
	// Reads counts point reads (Get).
	Reads int64 `json:"reads"`
	// RangeReads counts range reads (GetRange calls that were consumed).
	RangeReads int64 `json:"range_reads"`
	// KeysRead counts keys returned by point and range reads.
	KeysRead int64 `json:"keys_read"`
	// BytesRead counts key and value bytes returned.
	BytesRead int64 `json:"bytes_read"`
	// Mutations counts sets, clears, range clears and atomic operations sent
	// with a commit.
	Mutations int64 `json:"mutations"`
	// BytesWritten counts the key and value (or parameter) bytes of those
	// mutations.
	BytesWritten int64 `json:"bytes_written"`
	// Commits counts commit attempts that carried mutations or write
	// conflicts (read-only commits cost no round trip and are not counted).
	Commits int64 `json:"commits"`
	// Conflicts counts commits that failed with 1020 not_committed.
	Conflicts int64 `json:"conflicts"`
	// Watches counts watches set.
	Watches int64 `json:"watches"`
}

// Sub returns s minus o, field by field: the operations between two readings.
func (s Stats) Sub(o Stats) Stats { return s.combine(o, -1) }

// Add returns s plus o, field by field.
func (s Stats) Add(o Stats) Stats { return s.combine(o, 1) }

func (s Stats) combine(o Stats, sign int64) Stats {
	return Stats{
		ReadVersions: s.ReadVersions + sign*o.ReadVersions,
		Reads:        s.Reads + sign*o.Reads,
		RangeReads:   s.RangeReads + sign*o.RangeReads,
		KeysRead:     s.KeysRead + sign*o.KeysRead,
		BytesRead:    s.BytesRead + sign*o.BytesRead,
		Mutations:    s.Mutations + sign*o.Mutations,
		BytesWritten: s.BytesWritten + sign*o.BytesWritten,
		Commits:      s.Commits + sign*o.Commits,
		Conflicts:    s.Conflicts + sign*o.Conflicts,
		Watches:      s.Watches + sign*o.Watches,
	}
}

// Per divides every count by n (jobs, say), for per-unit figures.
func (s Stats) Per(n int64) PerUnit {
	if n <= 0 {
		n = 1
	}
	f := func(v int64) float64 { return float64(v) / float64(n) }
	return PerUnit{
		ReadVersions: f(s.ReadVersions), Reads: f(s.Reads), RangeReads: f(s.RangeReads),
		KeysRead: f(s.KeysRead), BytesRead: f(s.BytesRead), Mutations: f(s.Mutations),
		BytesWritten: f(s.BytesWritten), Commits: f(s.Commits), Conflicts: f(s.Conflicts),
		Watches: f(s.Watches),
	}
}

func (s Stats) String() string {
	return fmt.Sprintf("grv=%d reads=%d range_reads=%d keys_read=%d bytes_read=%d mutations=%d bytes_written=%d commits=%d conflicts=%d watches=%d",
		s.ReadVersions, s.Reads, s.RangeReads, s.KeysRead, s.BytesRead, s.Mutations, s.BytesWritten, s.Commits, s.Conflicts, s.Watches)
}

// PerUnit is Stats divided by a count of units of work.
type PerUnit struct {
	ReadVersions float64 `json:"read_versions"`
	Reads        float64 `json:"reads"`
	RangeReads   float64 `json:"range_reads"`
	KeysRead     float64 `json:"keys_read"`
	BytesRead    float64 `json:"bytes_read"`
	Mutations    float64 `json:"mutations"`
	BytesWritten float64 `json:"bytes_written"`
	Commits      float64 `json:"commits"`
	Conflicts    float64 `json:"conflicts"`
	Watches      float64 `json:"watches"`
}

func (p PerUnit) String() string {
	return fmt.Sprintf("grv=%.2f reads=%.2f range_reads=%.2f keys_read=%.2f bytes_read=%.1f mutations=%.2f bytes_written=%.1f commits=%.2f conflicts=%.3f",
		p.ReadVersions, p.Reads, p.RangeReads, p.KeysRead, p.BytesRead, p.Mutations, p.BytesWritten, p.Commits, p.Conflicts)
}

// Counters accumulates Stats from many goroutines.
type Counters struct {
	readVersions, reads, rangeReads, keysRead, bytesRead atomic.Int64
	mutations, bytesWritten, commits, conflicts, watches atomic.Int64
}

// Snapshot returns the counts so far.
func (c *Counters) Snapshot() Stats {
	return Stats{
		ReadVersions: c.readVersions.Load(), Reads: c.reads.Load(), RangeReads: c.rangeReads.Load(),
		KeysRead: c.keysRead.Load(), BytesRead: c.bytesRead.Load(), Mutations: c.mutations.Load(),
		BytesWritten: c.bytesWritten.Load(), Commits: c.commits.Load(), Conflicts: c.conflicts.Load(),
		Watches: c.watches.Load(),
	}
}

// CountedDB is a Database that counts the operations of its transactions.
// It wraps any engine, FDB included.
type CountedDB struct {
	inner Database
	c     *Counters
}

// WithCounters wraps db so that every transaction's operations are counted.
func WithCounters(db Database) *CountedDB {
	return &CountedDB{inner: db, c: &Counters{}}
}

// Stats returns the counts so far.
func (d *CountedDB) Stats() Stats { return d.c.Snapshot() }

// Counters returns the live counters, to count a transaction made elsewhere
// with CountTransaction.
func (d *CountedDB) Counters() *Counters { return d.c }

// Unwrap returns the wrapped database.
func (d *CountedDB) Unwrap() Database { return d.inner }

// CreateTransaction implements Database.
func (d *CountedDB) CreateTransaction() (Transaction, error) {
	tr, err := d.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return CountTransaction(tr, d.c), nil
}

// Transact implements Database.
func (d *CountedDB) Transact(ctx context.Context, fn func(Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return Retry(ctx, tr, fn)
}

// ReadTransact implements Database.
func (d *CountedDB) ReadTransact(ctx context.Context, fn func(ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return RetryRead(ctx, tr, fn)
}

// CountTransaction wraps tr so its operations add to c. Mutations are
// counted when they are sent, at Commit.
func CountTransaction(tr Transaction, c *Counters) Transaction {
	return &countedTx{Transaction: tr, c: c}
}

type countedTx struct {
	Transaction
	c *Counters
	// grv is set once this attempt has taken a read version.
	grv atomic.Bool
	// pending mutations of this attempt, counted at commit.
	muts, bytes      int64
	writeConflicts   bool
	snapshotReadView countedRead
}

func (t *countedTx) tookGRV() {
	if t.grv.CompareAndSwap(false, true) {
		t.c.readVersions.Add(1)
	}
}

func (t *countedTx) Get(key []byte) Future[[]byte] {
	t.tookGRV()
	return countGet(t.Transaction.Get(key), t.c)
}

func (t *countedTx) GetRange(r KeyRange, opts RangeOptions) RangeResult {
	t.tookGRV()
	return &countedRange{inner: t.Transaction.GetRange(r, opts), c: t.c}
}

func (t *countedTx) GetReadVersion() Future[int64] {
	t.tookGRV()
	return t.Transaction.GetReadVersion()
}

func (t *countedTx) Snapshot() ReadTransaction {
	return &countedRead{inner: t.Transaction.Snapshot(), tx: t}
}

func (t *countedTx) mutation(keyLen, valLen int) {
	t.muts++
	t.bytes += int64(keyLen + valLen)
}

func (t *countedTx) Set(key, value []byte) {
	t.mutation(len(key), len(value))
	t.Transaction.Set(key, value)
}

func (t *countedTx) Clear(key []byte) {
	t.mutation(len(key), 0)
	t.Transaction.Clear(key)
}

func (t *countedTx) ClearRange(r KeyRange) {
	t.mutation(len(r.Begin), len(r.End))
	t.Transaction.ClearRange(r)
}

func (t *countedTx) Atomic(op MutationType, key, param []byte) {
	t.mutation(len(key), len(param))
	t.Transaction.Atomic(op, key, param)
}

func (t *countedTx) Add(key, param []byte) {
	t.mutation(len(key), len(param))
	t.Transaction.Add(key, param)
}

func (t *countedTx) Max(key, param []byte) {
	t.mutation(len(key), len(param))
	t.Transaction.Max(key, param)
}

func (t *countedTx) Min(key, param []byte) {
	t.mutation(len(key), len(param))
	t.Transaction.Min(key, param)
}

func (t *countedTx) CompareAndClear(key, param []byte) {
	t.mutation(len(key), len(param))
	t.Transaction.CompareAndClear(key, param)
}

func (t *countedTx) SetVersionstampedKey(key, value []byte) {
	t.mutation(len(key), len(value))
	t.Transaction.SetVersionstampedKey(key, value)
}

func (t *countedTx) SetVersionstampedValue(key, value []byte) {
	t.mutation(len(key), len(value))
	t.Transaction.SetVersionstampedValue(key, value)
}

func (t *countedTx) AddWriteConflictKey(key []byte) error {
	t.writeConflicts = true
	return t.Transaction.AddWriteConflictKey(key)
}

func (t *countedTx) AddWriteConflictRange(r KeyRange) error {
	t.writeConflicts = true
	return t.Transaction.AddWriteConflictRange(r)
}

func (t *countedTx) Watch(key []byte) Watch {
	t.c.watches.Add(1)
	return t.Transaction.Watch(key)
}

func (t *countedTx) Commit() error {
	writes := t.muts > 0 || t.writeConflicts
	if writes {
		t.c.commits.Add(1)
		t.c.mutations.Add(t.muts)
		t.c.bytesWritten.Add(t.bytes)
	}
	err := t.Transaction.Commit()
	if writes && Code(err) == ErrNotCommitted.Code {
		t.c.conflicts.Add(1)
	}
	return err
}

func (t *countedTx) resetAttempt() {
	t.grv.Store(false)
	t.muts, t.bytes, t.writeConflicts = 0, 0, false
}

func (t *countedTx) OnError(err error) error {
	if rerr := t.Transaction.OnError(err); rerr != nil {
		return rerr
	}
	t.resetAttempt()
	return nil
}

func (t *countedTx) Reset() {
	t.Transaction.Reset()
	t.resetAttempt()
}

// countedRead is the snapshot view of a counted transaction.
type countedRead struct {
	inner ReadTransaction
	tx    *countedTx
}

func (r *countedRead) Get(key []byte) Future[[]byte] {
	r.tx.tookGRV()
	return countGet(r.inner.Get(key), r.tx.c)
}

func (r *countedRead) GetRange(kr KeyRange, opts RangeOptions) RangeResult {
	r.tx.tookGRV()
	return &countedRange{inner: r.inner.GetRange(kr, opts), c: r.tx.c}
}

func (r *countedRead) GetReadVersion() Future[int64] {
	r.tx.tookGRV()
	return r.inner.GetReadVersion()
}

func (r *countedRead) Snapshot() ReadTransaction { return r }

type countedGet struct {
	inner Future[[]byte]
	c     *Counters
	done  atomic.Bool
}

func countGet(f Future[[]byte], c *Counters) Future[[]byte] {
	c.reads.Add(1)
	return &countedGet{inner: f, c: c}
}

func (g *countedGet) Get() ([]byte, error) {
	v, err := g.inner.Get()
	if err == nil && v != nil && g.done.CompareAndSwap(false, true) {
		g.c.keysRead.Add(1)
		g.c.bytesRead.Add(int64(len(v)))
	}
	return v, err
}

type countedRange struct {
	inner   RangeResult
	c       *Counters
	counted atomic.Bool
}

func (r *countedRange) start() {
	if r.counted.CompareAndSwap(false, true) {
		r.c.rangeReads.Add(1)
	}
}

func (r *countedRange) GetSliceWithError() ([]KeyValue, error) {
	r.start()
	kvs, err := r.inner.GetSliceWithError()
	var n int64
	for _, p := range kvs {
		n += int64(len(p.Key) + len(p.Value))
	}
	r.c.keysRead.Add(int64(len(kvs)))
	r.c.bytesRead.Add(n)
	return kvs, err
}

func (r *countedRange) Iterator() RangeIterator {
	r.start()
	return &countedIter{inner: r.inner.Iterator(), c: r.c}
}

type countedIter struct {
	inner RangeIterator
	c     *Counters
}

func (it *countedIter) Advance() bool { return it.inner.Advance() }

func (it *countedIter) Get() (KeyValue, error) {
	p, err := it.inner.Get()
	if err == nil {
		it.c.keysRead.Add(1)
		it.c.bytesRead.Add(int64(len(p.Key) + len(p.Value)))
	}
	return p, err
}
