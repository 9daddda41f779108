package memkv

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
)

// DB is an embedded database implementing kv.Database. It is safe for
// concurrent use by many goroutines.
type DB struct {
	opts   Options
	clock  clock.Clock
	start  time.Time // engine clock at Open: version initialVersion
	window int64     // MVCCWindow in versions

	store   *store
	watches *watchRegistry

	rngMu sync.Mutex
	rng   *rand.Rand

	closed atomic.Bool
	stats  struct {
		commits, readOnly, conflicts, tooOld atomic.Int64
	}
}

var _ kv.Database = (*DB)(nil)

// initialVersion is the version of the empty database at Open.
const initialVersion = 1

// Open creates an empty database.
func Open(opts Options) *DB {
	o := opts.withDefaults()
	db := &DB{
		opts:    o,
		clock:   o.Clock,
		start:   o.Clock.Now(),
		window:  o.MVCCWindow.Microseconds(),
		store:   newStore(initialVersion),
		watches: newWatchRegistry(o.MaxWatches),
		rng:     rand.New(rand.NewPCG(uint64(o.Seed), 0x51ed2701)),
	}
	return db
}

// Close releases the database: armed watches fail with 1101
// (operation_cancelled) and new transactions cannot be created (2000).
// Transactions already open keep working on the data they can reach.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	db.watches.closeAll(errOperationCancelled)
	return nil
}

// CreateTransaction starts a transaction with no retry loop around it.
func (db *DB) CreateTransaction() (kv.Transaction, error) {
	if db.closed.Load() {
		return nil, errInvalidOperation
	}
	return newTxn(db), nil
}

// Transact runs fn in a transaction and commits it, with FDB's retry loop
// (kv.Retry).
func (db *DB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := db.CreateTransaction()
	if err != nil {
		return err
	}
	defer tr.(*txn).release()
	return kv.Retry(ctx, tr, fn)
}

// ReadTransact runs fn in a transaction that is never committed, with FDB's
// retry loop (kv.RetryRead). Watches cannot be armed from it.
func (db *DB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := db.CreateTransaction()
	if err != nil {
		return err
	}
	defer tr.(*txn).release()
	return kv.RetryRead(ctx, tr, fn)
}

// versionAt is the version the engine clock gives time now: about 1,000,000
// versions a second since Open, as FDB's versions advance.
func (db *DB) versionAt(now time.Time) int64 {
	return initialVersion + now.Sub(db.start).Microseconds()
}

func (db *DB) clockVersion() int64 { return db.versionAt(db.clock.Now()) }

// tooOld reports whether read version rv has left the MVCC window.
func (db *DB) tooOld(rv int64) bool {
	return db.clockVersion()-rv > db.window
}

// delay samples an injected latency.
func (db *DB) delay(r LatencyRange) time.Duration {
	if r.zero() {
		return 0
	}
	db.rngMu.Lock()
	defer db.rngMu.Unlock()
	return r.Min + time.Duration(db.rng.Int64N(int64(r.Max-r.Min)+1))
}

// jitter returns a uniformly random duration in [0, d), for backoff.
func (db *DB) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	db.rngMu.Lock()
	defer db.rngMu.Unlock()
	return time.Duration(db.rng.Int64N(int64(d)))
}

// Stats is a snapshot of the engine's counters.
type Stats struct {
	// Version is the latest committed version.
	Version int64
	// Keys is the number of keys stored at that version.
	Keys int
	// Commits counts successful commits that wrote something.
	Commits int64
	// ReadOnlyCommits counts commits with nothing to write.
	ReadOnlyCommits int64
	// Conflicts counts commits that failed with 1020.
	Conflicts int64
	// TooOld counts commits that failed with 1007.
	TooOld int64
	// ConflictHistory is the number of steps in the resolver's write
	// history.
	ConflictHistory int
	// Watches is the number of armed watches.
	Watches int
}

// Stats returns the engine's counters.
func (db *DB) Stats() Stats {
	cur := db.store.latest()
	db.store.commitMu.Lock()
	hist := db.store.hist.size
	db.store.commitMu.Unlock()
	return Stats{
		Version:         cur.version,
		Keys:            cur.tree.Len(),
		Commits:         db.stats.commits.Load(),
		ReadOnlyCommits: db.stats.readOnly.Load(),
		Conflicts:       db.stats.conflicts.Load(),
		TooOld:          db.stats.tooOld.Load(),
		ConflictHistory: hist,
		Watches:         db.watches.count(),
	}
}
