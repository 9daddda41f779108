package quick

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

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
	opts  Options
	lanes int

	// knownTypes caches the task types this process has registered, so only
	// the first enqueue of a type per process pays for registering it.
	knownTypes sync.Map
	// deadHooks maps a task type to its DeadLetterHook (deadhook.go).
	deadHooks sync.Map
	// peekFrom maps a task type and priority to the oldest vested ms of
	// its pointer index that a claim last saw (pointer.go, acquire).
	peekFrom sync.Map
	// pickRand, set by tests only, replaces acquire's random source so
	// that a trial is reproducible from its seed; nil: math/rand/v2.
	pickRand func() uint64
}

// Open opens the queue under space, creating its configuration on first use.
//
// Keys: reads and may write S(1,"cfg").
func Open(ctx context.Context, db kv.Database, space tuple.Subspace, opts Options) (*Queue, error) {
	if db == nil || reflect.ValueOf(db).Kind() == reflect.Pointer && reflect.ValueOf(db).IsNil() {
		return nil, fmt.Errorf("%w: nil database (did opening it fail?)", ErrInvalidOption)
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	q := &Queue{db: db, space: space, k: newKeys(space), zk: newZKeys(space), opts: opts}
	// Idempotent: a retry after an unknown result reads what it wrote.
	err := txn.TransactWatched(ctx, db, func(tr kv.Transaction, _ bool) error {
		v, err := tr.Get(q.k.cfg).Get()
		if err != nil {
			return err
		}
		if v == nil {
			q.lanes = cmp.Or(opts.Lanes, defaultLanes)
			tr.Set(q.k.cfg, marshalConfig(q.lanes))
			return nil
		}
		n, err := unmarshalConfig(v)
		if err != nil {
			return err
		}
		q.lanes = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quick: open queue: %w", err)
	}
	if opts.Lanes != 0 && q.lanes != opts.Lanes {
		return nil, fmt.Errorf("%w: the queue was created with %d lanes, Options.Lanes is %d (set it to 0 to adopt the stored count)",
			ErrConfigMismatch, q.lanes, opts.Lanes)
	}
	q.opts.Lanes = q.lanes
	return q, nil
}

// DB returns the queue's database.
func (q *Queue) DB() kv.Database { return q.db }

// Lanes returns the number of lanes per task type.
func (q *Queue) Lanes() int { return q.lanes }

// Subspace returns the subspace the queue lives under.
func (q *Queue) Subspace() tuple.Subspace { return q.space }

// Root returns the subspace of this schema version, under which other
// packages (lanes, cron) keep their keys beside the queue's.
func (q *Queue) Root() tuple.Subspace { return q.k.root }

// Now returns the queue clock's time.
func (q *Queue) Now() time.Time { return q.opts.Clock.Now() }

// Options returns the queue's options, defaults filled in.
func (q *Queue) Options() Options { return q.opts }

// NewID returns a new job ID from the queue's clock.
func (q *Queue) NewID() ID { return NewID(q.Now()) }

// defaultLanes is the lane count of a queue created with Options.Lanes 0.
const defaultLanes = 16

func marshalConfig(lanes int) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(lanes))
}

func unmarshalConfig(b []byte) (int, error) {
	lanes := 0
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
		if num == 1 {
			lanes = int(x)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if lanes <= 0 || lanes > 4096 {
		return 0, fmt.Errorf("%w: configuration holds %d lanes", ErrCorrupt, lanes)
	}
	return lanes, nil
}

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
