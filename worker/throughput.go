package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Fleet throughput: how many jobs the whole fleet completed and failed per
// task type and minute, kept in the database so that a console with no
// worker in its process can show it.
//
// A worker does not write per job: it counts in memory (an atomic add per
// completion or failure) and adds its counts to the minute's counters in
// its clock round's transaction, the one that rewrites its presence
// record (once every clockPeriods heartbeat periods, 5 s by default): at
// most two atomic adds per task type that ran jobs since the last round,
// whatever the load. Counts not yet committed stay pending and go with the
// next round (or the graceful stop's transaction), so a failed round loses
// nothing; a round whose commit outcome was unknown and retried may count
// its jobs twice. The built-in duty "purge-presence" clears the minutes
// older than throughputKeep with one range clear.
//
// Keys: S (1, "tp", minute, type, kind) -> little-endian int64, added
// atomically (minute: Unix minutes; kind 0 completed, 1 failed).

// throughputKeep is how long the minute counters are kept.
const throughputKeep = 2 * time.Hour

// maxThroughputPending bounds the counts a worker keeps while its rounds
// fail to commit (types × minutes); past it the oldest minutes are dropped.
const maxThroughputPending = 1024

// Throughput read limits, in keys.
const (
	defaultThroughputLimit = 10_000
	maxThroughputLimit     = 50_000
)

const (
	tpCompleted int64 = 0
	tpFailed    int64 = 1
)

func throughputSpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("tp") }

// ThroughputMinute is what the fleet did in one minute with one task type.
type ThroughputMinute struct {
	Minute            time.Time // the minute's start
	TaskType          string
	Completed, Failed int64
}

// ThroughputOptions select the minutes to read.
type ThroughputOptions struct {
	// Since is the first minute read (rounded down); default an hour ago.
	Since time.Time
	// Limit is the most counter keys read (two per type and minute);
	// default 10,000, at most 50,000.
	Limit int
}

// Throughput is the fleet's completions and failures per minute.
type Throughput struct {
	// Minutes are in minute then task type order; the last minute is the
	// one in progress.
	Minutes []ThroughputMinute
	// Exact is false when the read stopped at Limit: later minutes are
	// missing.
	Exact bool
}

// ReadThroughput reads the fleet's throughput counters from opts.Since to
// now, in one snapshot range read of at most Limit keys.
//
// Keys: a snapshot range read of S (1, "tp", since..now).
func ReadThroughput(ctx context.Context, q *quick.Queue, opts ThroughputOptions) (Throughput, error) {
	if q == nil {
		return Throughput{}, fmt.Errorf("%w: nil queue", ErrInvalidConfig)
	}
	now := q.Now()
	if opts.Since.IsZero() {
		opts.Since = now.Add(-time.Hour)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultThroughputLimit
	}
	limit = min(limit, maxThroughputLimit)
	space := throughputSpace(q)
	r := kv.KeyRange{Begin: space.Pack(tuple.Tuple{unixMinute(opts.Since)}), End: space.Pack(tuple.Tuple{unixMinute(now) + 2})}
	var out Throughput
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = Throughput{Exact: true}
		kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		out.Exact = len(kvs) < limit
		for _, p := range kvs {
			t, err := space.Unpack(p.Key)
			if err != nil || len(t) != 3 || len(p.Value) != 8 {
				continue // not a counter this build writes
			}
			minute, ok1 := t[0].(int64)
			typ, ok2 := t[1].(string)
			kind, ok3 := t[2].(int64)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			n := int64(binary.LittleEndian.Uint64(p.Value))
			at := time.Unix(minute*60, 0)
			if len(out.Minutes) == 0 || !out.Minutes[len(out.Minutes)-1].Minute.Equal(at) || out.Minutes[len(out.Minutes)-1].TaskType != typ {
				out.Minutes = append(out.Minutes, ThroughputMinute{Minute: at, TaskType: typ})
			}
			m := &out.Minutes[len(out.Minutes)-1]
			switch kind {
			case tpCompleted:
				m.Completed += n
			case tpFailed:
				m.Failed += n
			}
		}
		return nil
	})
	if err != nil {
		return Throughput{}, fmt.Errorf("worker: read throughput: %w", err)
	}
	return out, nil
}

func unixMinute(t time.Time) int64 { return t.Unix() / 60 }

// tally is one task type's counts since they were last drained.
type tally struct{ completed, failed atomic.Int64 }

// tpBucket names one counter key.
type tpBucket struct {
	minute   int64
	taskType string
	kind     int64
}

// throughput is a worker's counts on their way to the database.
type throughput struct {
	tallies sync.Map // task type -> *tally: the hot path's counts
	mu      sync.Mutex
	pending map[tpBucket]int64 // drained, not yet known committed
}

// count adds n completions or failures of taskType: one map load and one
// atomic add per job, nothing written.
func (t *throughput) count(taskType string, failed bool, n int64) {
	v, ok := t.tallies.Load(taskType)
	if !ok {
		v, _ = t.tallies.LoadOrStore(taskType, &tally{})
	}
	tl := v.(*tally)
	if failed {
		tl.failed.Add(n)
	} else {
		tl.completed.Add(n)
	}
}

// add drains the tallies into the pending counts (at now's minute) and
// adds every pending count to tr: at most two atomic adds per task type
// and minute pending.
//
// Keys: atomic adds to S (1, "tp", minute, type, kind).
func (t *throughput) add(tr kv.Transaction, space tuple.Subspace, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if mutant.On("worker.tp-pending") {
		clear(t.pending) // the break: a failed round's counts are lost
	}
	minute := unixMinute(now)
	t.tallies.Range(func(k, v any) bool {
		tl := v.(*tally)
		if n := tl.completed.Swap(0); n != 0 {
			t.bump(tpBucket{minute, k.(string), tpCompleted}, n)
		}
		if n := tl.failed.Swap(0); n != 0 {
			t.bump(tpBucket{minute, k.(string), tpFailed}, n)
		}
		return true
	})
	var buf [8]byte
	for b, n := range t.pending {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		tr.Add(space.Pack(tuple.Tuple{b.minute, b.taskType, b.kind}), buf[:])
	}
}

// bump adds n to a pending count, dropping the oldest minute when the
// pending counts are full (rounds that keep failing to commit).
func (t *throughput) bump(b tpBucket, n int64) {
	if t.pending == nil {
		t.pending = map[tpBucket]int64{}
	}
	if _, ok := t.pending[b]; !ok && len(t.pending) >= maxThroughputPending {
		oldest := b
		for k := range t.pending {
			if k.minute < oldest.minute {
				oldest = k
			}
		}
		if oldest == b {
			return
		}
		delete(t.pending, oldest)
	}
	t.pending[b] += n
}

// committed forgets the pending counts: the transaction that added them
// committed.
func (t *throughput) committed() {
	t.mu.Lock()
	clear(t.pending)
	t.mu.Unlock()
}

// purgeThroughput clears the minute counters older than throughputKeep.
//
// Keys: one range clear of S (1, "tp") below now - throughputKeep.
func purgeThroughput(tr kv.Transaction, q *quick.Queue, now time.Time) {
	space := throughputSpace(q)
	b, _ := space.Range()
	tr.ClearRange(kv.KeyRange{Begin: b, End: space.Pack(tuple.Tuple{unixMinute(now.Add(-throughputKeep))})})
}
