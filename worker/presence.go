package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Presence: each running worker keeps one record saying who it is and what
// it runs, so that the console and the CLI can list the workers
// (ListWorkers). Nothing in the claim path reads it: workers find work
// through the pointer index and judge their clocks through the clock
// samples (clockguard.go), never through each other's presence.
//
// A worker rewrites its record in each round of its clock check, once every
// clockPeriods heartbeat periods (5 s by default), as one more set in that
// round's transaction (at most about 2 kB: up to maxPresenceRunning job
// IDs): no transaction of its own, whatever its load. It clears the record
// on a graceful stop. A crashed worker's record stops being rewritten:
// ListWorkers skips a record whose beat is older than presenceStale of its
// writer's periods, and the built-in duty "purge-presence" clears such
// records, at most presenceSweep a pass.
//
// Keys: S (1, "wp", workerID) -> presence record.

// maxPresenceRunning bounds the running job IDs a record lists.
const maxPresenceRunning = 64

// presenceStale is how many of its writer's periods without a beat make a
// record stale.
const presenceStale = 3

// presenceSweep bounds the records one pass of the purge-presence duty reads.
const presenceSweep = 1000

// maxListWorkers bounds one ListWorkers call.
const maxListWorkers = 1000

// Presence is what a worker's presence record says.
type Presence struct {
	ID string
	// Process names the worker's process: host and pid.
	Process string
	// TaskTypes are the task types it has handlers for.
	TaskTypes []string
	// Running are jobs it runs (or holds claimed, waiting for a handler)
	// as of its last beat: at most 64, the rest are not listed.
	Running []quick.ID
	// Started is when the worker started; Beat when it last wrote the
	// record.
	Started, Beat time.Time
	// Cluster names the cluster the worker serves this database as, in a
	// process that serves several (worker.Group); "" otherwise.
	Cluster string
}

// ListWorkers lists the workers whose presence records are fresh (written
// within the last three periods of each), in worker ID order. It
// reads at most limit records in one range read (default 100, at most
// 1000), so it returns at most limit workers, fewer when some records it
// read were stale or did not decode.
//
// Keys: one snapshot range read of S (1, "wp") of at most limit keys.
func ListWorkers(ctx context.Context, q *quick.Queue, limit int) ([]Presence, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidConfig)
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxListWorkers)
	space := presenceSpace(q)
	var out []Presence
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		b, e := space.Range()
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		now := q.Now()
		for _, p := range kvs {
			rec, err := decodePresence(space, p)
			if err != nil || rec.stale(now) {
				continue
			}
			out = append(out, rec.Presence)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("worker: list workers: %w", err)
	}
	return out, nil
}

func presenceSpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("wp") }

// presenceRecord is a record as stored: the Presence and the writer's
// heartbeat period, by which its staleness is judged.
type presenceRecord struct {
	Presence
	period time.Duration
}

func (r presenceRecord) stale(now time.Time) bool {
	return now.Sub(r.Beat) > presenceStale*r.period
}

func (r presenceRecord) marshal() []byte {
	b := make([]byte, 0, 64+len(r.Process)+16*len(r.Running))
	b = wire.AppendString(b, 1, r.Process)
	for _, t := range r.TaskTypes {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, t)
	}
	for _, id := range r.Running {
		b = wire.AppendBytes(b, 3, id[:])
	}
	b = wire.AppendVarint(b, 4, uint64(r.Started.UnixMilli()))
	b = wire.AppendVarint(b, 5, uint64(r.Beat.UnixMilli()))
	b = wire.AppendVarint(b, 6, uint64(r.period.Milliseconds()))
	if r.Cluster != "" {
		b = wire.AppendString(b, 7, r.Cluster)
	}
	return b
}

var errBadPresence = errors.New("worker: presence record does not decode")

func decodePresence(space tuple.Subspace, p kv.KeyValue) (presenceRecord, error) {
	var r presenceRecord
	t, err := space.Unpack(p.Key)
	if err != nil || len(t) != 1 {
		return r, fmt.Errorf("%w: key", errBadPresence)
	}
	id, ok := t[0].(string)
	if !ok {
		return r, fmt.Errorf("%w: key", errBadPresence)
	}
	r.ID = id
	err = wire.Walk(p.Value, func(num protowire.Number, _ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			r.Process = string(raw)
		case 2:
			r.TaskTypes = append(r.TaskTypes, string(raw))
		case 3:
			if len(raw) != len(quick.ID{}) {
				return fmt.Errorf("%w: job ID of %d bytes", errBadPresence, len(raw))
			}
			r.Running = append(r.Running, quick.ID(raw))
		case 4:
			r.Started = time.UnixMilli(int64(x))
		case 5:
			r.Beat = time.UnixMilli(int64(x))
		case 6:
			r.period = time.Duration(x) * time.Millisecond
		case 7:
			r.Cluster = string(raw)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("%w: %w", errBadPresence, err)
	}
	if r.period <= 0 {
		return r, fmt.Errorf("%w: no heartbeat period", errBadPresence)
	}
	return r, nil
}

// presence is this worker's record, written by the clock check's rounds
// (clockguard.go).
type presence struct {
	w       *Worker
	key     []byte
	process string
	started time.Time // set by Run, before the clock loop starts
	// tp is the worker's throughput counts, added to the fleet's minute
	// counters with the record (throughput.go).
	tp throughput
	// ts is the worker's start counts per tenant, added the same way
	// (tenantstarts.go).
	ts tenantStarts
}

func newPresence(w *Worker) *presence {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return &presence{
		w:       w,
		key:     presenceSpace(w.q).Pack(tuple.Tuple{w.cfg.ID}),
		process: fmt.Sprintf("%s-%d", host, os.Getpid()),
	}
}

// record is the worker's presence at now: its task types and up to
// maxPresenceRunning of its runs, lowest job IDs first (a stable pick).
func (p *presence) record(now time.Time) presenceRecord {
	w := p.w
	r := presenceRecord{period: clockPeriods * w.cfg.HeartbeatPeriod}
	r.ID, r.Process, r.Started, r.Beat, r.Cluster = w.cfg.ID, p.process, p.started, now, w.cfg.Cluster
	r.TaskTypes = w.TaskTypes()
	for _, run := range w.snapshotRunners() {
		for _, st := range run.runningJobs() {
			r.Running = append(r.Running, st.first.ID) // first never changes: no lock
		}
	}
	slices.SortFunc(r.Running, func(a, b quick.ID) int { return slices.Compare(a[:], b[:]) })
	r.Running = slices.Compact(r.Running) // a job run twice at once is listed once
	if len(r.Running) > maxPresenceRunning {
		r.Running = r.Running[:maxPresenceRunning]
	}
	return r
}

// write sets the record in tr (a clock round's transaction), with the
// worker's throughput counts since the last committed round; committed
// tells it the round committed.
//
// Keys: sets S (1, "wp", workerID); atomic adds to S (1, "tp", minute,
// type, kind), at most two per task type that ran jobs (throughput.go),
// and to S (1, "tr", minute, type, itemSpace), at most 1,024
// (tenantstarts.go).
func (p *presence) write(tr kv.Transaction, now time.Time) {
	tr.Set(p.key, p.record(now).marshal())
	p.tp.add(tr, throughputSpace(p.w.q), now)
	p.ts.add(tr, tenantStartsSpace(p.w.q), now)
}

// committed says the last write's transaction committed: its throughput
// counts are in the database.
func (p *presence) committed() { p.tp.committed(); p.ts.committed() }

// stop clears the record at a graceful stop, so the worker leaves the
// listing at once rather than after presenceStale periods.
//
// Its last throughput counts go with it.
//
// Keys: clears S (1, "wp", workerID); atomic adds to S (1, "tp", ...) and
// S (1, "tr", ...).
func (p *presence) stop(ctx context.Context) error {
	err := p.w.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		tr.Clear(p.key)
		p.tp.add(tr, throughputSpace(p.w.q), p.w.q.Now())
		p.ts.add(tr, tenantStartsSpace(p.w.q), p.w.q.Now())
		return nil
	})
	if err != nil {
		return fmt.Errorf("worker: clearing the presence record: %w", err)
	}
	p.committed()
	return nil
}

// purgePresence clears stale presence records (workers that crashed), at
// most presenceSweep read a pass, and returns how many it cleared. A record
// rewritten meanwhile (a worker that was only slow) makes the commit
// conflict and the pass retry, finding it fresh. It also clears the
// fleet's throughput minutes past throughputKeep (throughput.go).
//
// Keys: one range read of S (1, "wp") of at most presenceSweep keys;
// clears the stale ones; one range clear each of S (1, "tp") and S (1,
// "tr") below the kept minutes.
func purgePresence(ctx context.Context, q *quick.Queue) (int, error) {
	space := presenceSpace(q)
	var n int
	err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		n = 0
		b, e := space.Range()
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: presenceSweep}).GetSliceWithError()
		if err != nil {
			return err
		}
		now := q.Now()
		purgeThroughput(tr, q, now)
		purgeTenantStarts(tr, q, now)
		for _, p := range kvs {
			rec, err := decodePresence(space, p)
			if err == nil && !rec.stale(now) {
				continue
			}
			// Stale, or a record nothing can read: no live worker writes it.
			tr.Clear(p.Key)
			n++
		}
		return nil
	})
	return n, err
}
