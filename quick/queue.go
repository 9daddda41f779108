package quick

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Queue is a QuiCK queue under one subspace of a database. It is safe for
// concurrent use; every method is one or a few FDB transactions.
type Queue struct {
	db    kv.Database
	space tuple.Subspace
	k     keys
	zk    zkeys
	// consumer is the claim protocol (Consumer).
	consumer Consumer
	opts     Options

	// knownTypes caches the task types this process has registered, so only
	// the first enqueue of a type per process pays for registering it.
	knownTypes sync.Map
	// deadHooks maps a task type to its DeadLetterHook (deadhook.go).
	deadHooks sync.Map
	// peekFrom maps a task type and priority to the oldest vested ms of
	// its pointer index that a claim last saw (pointer.go, acquire).
	peekFrom sync.Map
	// scanTurns maps a task type to this process's zone turns (*zoneTurns,
	// scan.go): which zone its scans took last, so that a round of scans
	// takes each zone once.
	scanTurns sync.Map
	// pickRand, set by tests only, replaces acquire's random source so
	// that a trial is reproducible from its seed; nil: math/rand/v2.
	pickRand func() uint64
	// limits maps a task type to this process's view of its tenant
	// limits (*limitsView, limits.go).
	limits sync.Map
}

// Open opens the queue under space. Nothing is written: a queue is its keys,
// and a new one has none. A queue that holds schema-1 job data (written by
// builds before the two levels became the only layout) is refused with an
// error wrapping ErrSchema1.
//
// Keys: one snapshot range read of S (1, "s") limited to one key, the
// schema-1 schedule keys.
func Open(ctx context.Context, db kv.Database, space tuple.Subspace, opts Options) (*Queue, error) {
	if db == nil || reflect.ValueOf(db).Kind() == reflect.Pointer && reflect.ValueOf(db).IsNil() {
		return nil, fmt.Errorf("%w: nil database (did opening it fail?)", ErrInvalidOption)
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	q := &Queue{db: db, space: space, k: newKeys(space), zk: newZKeys(space), opts: opts}
	q.consumer.q = q
	var old bool
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.Snapshot().GetRange(rangeOf(q.k.schema1Sched), kv.RangeOptions{Limit: 1}).GetSliceWithError()
		old = len(kvs) > 0
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("quick: open queue: %w", err)
	}
	if old {
		return nil, fmt.Errorf("quick: open queue: %w: its schedule keys S (1, \"s\", ...) would never run (CHANGELOG, Unreleased)", ErrSchema1)
	}
	return q, nil
}

// DB returns the queue's database.
func (q *Queue) DB() kv.Database { return q.db }

// Subspace returns the subspace the queue lives under.
func (q *Queue) Subspace() tuple.Subspace { return q.space }

// Root returns the subspace of this schema version, under which other
// packages (lanes, cron) keep their keys beside the queue's.
func (q *Queue) Root() tuple.Subspace { return q.k.root }

// Now returns the queue clock's time.
func (q *Queue) Now() time.Time { return q.opts.Clock.Now() }

// Options returns the queue's options, defaults filled in.
func (q *Queue) Options() Options { return q.opts }

// NewID returns a new job ID from the queue's clock: the ID to make once,
// before your own transaction's retry loop, and pass in InsertOpts.ID or
// NewJob.ID (the package doc, "Which enqueue call, which ID").
func (q *Queue) NewID() ID { return NewID(q.Now()) }

func validTaskType(t string) error {
	if t == "" {
		return fmt.Errorf("%w: empty", ErrInvalidTaskType)
	}
	if len(t) > MaxTaskTypeLen {
		return fmt.Errorf("%w: %d bytes, over %d", ErrInvalidTaskType, len(t), MaxTaskTypeLen)
	}
	return nil
}

// transact runs fn with the database's retry loop, telling it whether an
// earlier attempt may have committed (it ended in commit_unknown_result).
// Operations use that to recognise their own earlier commit on a retry, so
// each is applied once: times, tokens and delays are fixed outside the loop,
// and a retry checks for the outcome it intended before reporting a lost
// lease or a duplicate.
func (q *Queue) transact(ctx context.Context, fn func(tr kv.Transaction, maybeCommitted bool) error) error {
	return txn.TransactWatched(ctx, q.db, fn)
}
