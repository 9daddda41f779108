package quick

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// NewJob describes a job to enqueue.
type NewJob struct {
	// ID identifies the job. Leave it zero to have one generated; inside
	// your own transaction, generate it once with NewID outside your retry
	// loop so a retry after commit_unknown_result finds the first attempt's
	// job instead of creating a second.
	ID       ID
	TaskType string
	Payload  []byte
	// Priority defaults to Normal.
	Priority Priority
	// RunAt delays the job until a time; Delay until a duration from now.
	// Set at most one; neither means now.
	RunAt time.Time
	Delay time.Duration
	// ItemSpace names the tenant the job belongs to, for inspection.
	ItemSpace string
	// MaxAttempts bounds the runs of the job before it is dead-lettered;
	// zero means the queue's default.
	MaxAttempts int
	// UniqueKey makes the job unique among the task type's pending and
	// running jobs: while one with this key exists, enqueueing another
	// returns the first.
	UniqueKey string
	// Waitable records the job's outcome when it finishes (completed,
	// dead-lettered or cancelled), for Wait and Outcome, until
	// Options.OutcomeRetention after its creation. It costs one more key
	// written by the transaction that finishes the job; jobs without it pay
	// nothing. Options.WaitableTypes makes every job of a task type waitable.
	Waitable bool
}

// Enqueued is the outcome of enqueueing one job.
type Enqueued struct {
	ID ID
	// Duplicate is set when no job was created because the ID was already
	// enqueued (a retried enqueue) or the unique key is held by another
	// pending or running job, whose ID is returned.
	Duplicate bool
	// RunAt is when the new job vests (zero for a duplicate).
	RunAt time.Time
}

// job is a validated NewJob.
type job struct {
	NewJob
	runAt time.Time
}

func (q *Queue) prepare(now time.Time, in NewJob) (job, error) {
	j := job{NewJob: in}
	if err := validTaskType(in.TaskType); err != nil {
		return j, err
	}
	if len(in.Payload) > MaxPayloadSize {
		return j, fmt.Errorf("%w: %d bytes, over %d (store large data elsewhere and enqueue its key)", ErrPayloadTooLarge, len(in.Payload), MaxPayloadSize)
	}
	if in.Delay < 0 {
		return j, fmt.Errorf("%w: negative delay %v", ErrInvalidDelay, in.Delay)
	}
	if in.Delay > 0 && !in.RunAt.IsZero() {
		return j, fmt.Errorf("%w: set RunAt or Delay, not both", ErrInvalidDelay)
	}
	p, err := in.Priority.normalize()
	if err != nil {
		return j, err
	}
	j.Priority = p
	if in.MaxAttempts < 0 {
		return j, fmt.Errorf("%w: MaxAttempts %d is negative", ErrInvalidOption, in.MaxAttempts)
	}
	if in.MaxAttempts == 0 {
		j.MaxAttempts = q.opts.MaxAttempts
		if k := q.opts.TaskTypes[in.TaskType].MaxAttempts; k > 0 {
			j.MaxAttempts = k
		}
	}
	if len(in.UniqueKey) > MaxUniqueKeyLen {
		return j, fmt.Errorf("%w: unique key of %d bytes, over %d", ErrInvalidOption, len(in.UniqueKey), MaxUniqueKeyLen)
	}
	if len(in.ItemSpace) > MaxItemSpaceLen {
		return j, fmt.Errorf("%w: item space of %d bytes, over %d", ErrInvalidOption, len(in.ItemSpace), MaxItemSpaceLen)
	}
	switch {
	case !in.RunAt.IsZero():
		j.runAt = in.RunAt
	default:
		j.runAt = now.Add(in.Delay)
	}
	if in.ID.IsZero() {
		j.ID = NewID(now)
	} else if err := q.checkID(now, in.ID); err != nil {
		return j, err
	}
	return j, nil
}

// checkID refuses IDs whose enqueue marker could be purged while a retry may
// still come: the marker lives IdempotencyWindow after the ID's time.
func (q *Queue) checkID(now time.Time, id ID) error {
	if !id.isV7() {
		return fmt.Errorf("%w: %s is not a version 7 UUID (make IDs with quick.NewID)", ErrInvalidID, id)
	}
	if age := now.Sub(id.Time()); age > q.opts.IdempotencyWindow/2 {
		return fmt.Errorf("%w: %s was made %v ago, over half the idempotency window %v (make the ID just before enqueueing)", ErrInvalidID, id, age.Round(time.Second), q.opts.IdempotencyWindow)
	}
	return nil
}

// EnqueueTx enqueues jobs inside the caller's transaction: they commit with
// the caller's own writes or not at all. The caller owns the retry loop, so
// give each job an ID made once outside it (NewJob.ID): a retry then returns
// the job the first attempt created, even if that attempt committed and the
// job has since run. Jobs without an ID get a fresh one per call.
//
// Keys: reads S(1,"j",id), S(1,"m",id) and S(1,"u",type,key) when a unique
// key is set; writes S(1,"s",...), S(1,"j",id), S(1,"m",id), and
// S(1,"u",type,key) for unique jobs. Until this process has seen a task
// type registered it also reads S(1,"t",type) (snapshot) and sets it.
// With LayoutZones the jobs go to their zones instead (enqueue.go): one
// key per job, one marker S(2,"m",id) per call named by its first job
// given an ID and listing the IDs stored under it (at most 4096 jobs given
// IDs per call); a call returns the jobs its marker lists as duplicates.
func (q *Queue) EnqueueTx(tr kv.Transaction, jobs ...NewJob) ([]Enqueued, error) {
	now := q.Now()
	prepared := make([]job, len(jobs))
	for i, in := range jobs {
		j, err := q.prepare(now, in)
		if err != nil {
			return nil, fmt.Errorf("quick: enqueue job %d (%s): %w", i, in.TaskType, err)
		}
		prepared[i] = j
	}
	if q.opts.Layout == LayoutZones {
		return q.zenqueueTxCall(tr, now, jobs, prepared)
	}
	return q.enqueueTx(tr, now, prepared, nil)
}

// enqueueTx writes jobs. prevWritten holds the IDs an earlier attempt of the
// same call wrote when that attempt may have committed: finding one of them
// stored is finding this call's own job, not a duplicate.
func (q *Queue) enqueueTx(tr kv.Transaction, now time.Time, jobs []job, prevWritten map[ID]bool) ([]Enqueued, error) {
	type reads struct {
		rec, mark, uniq kv.Future[[]byte]
	}
	rs := make([]reads, len(jobs))
	// Issue every read before waiting on any: one round trip for the batch.
	for i, j := range jobs {
		rs[i].rec = tr.Get(q.k.jobKey(j.ID))
		rs[i].mark = tr.Get(q.k.markKey(j.ID))
		if j.UniqueKey != "" {
			rs[i].uniq = tr.Get(q.k.uniqKey(j.TaskType, j.UniqueKey))
		}
	}
	types := map[string]kv.Future[[]byte]{}
	for _, j := range jobs {
		if _, known := q.knownTypes.Load(j.TaskType); !known && types[j.TaskType] == nil {
			types[j.TaskType] = tr.Snapshot().Get(q.k.typeKey(j.TaskType))
		}
	}
	sleepers := q.readSleepers(tr, now, jobs)
	out := make([]Enqueued, len(jobs))
	// Jobs earlier in this batch, which the reads above could not see.
	seenID := map[ID]bool{}
	seenUniq := map[string]ID{}
	for i, j := range jobs {
		rec, err := rs[i].rec.Get()
		if err != nil {
			return nil, err
		}
		mark, err := rs[i].mark.Get()
		if err != nil {
			return nil, err
		}
		if rec != nil || mark != nil || seenID[j.ID] {
			out[i] = Enqueued{ID: j.ID, Duplicate: !prevWritten[j.ID]}
			if !out[i].Duplicate {
				out[i].RunAt = j.runAt
			}
			continue
		}
		if j.UniqueKey != "" {
			uk := j.TaskType + "\x00" + j.UniqueKey
			if first, ok := seenUniq[uk]; ok {
				out[i] = Enqueued{ID: first, Duplicate: true}
				continue
			}
			holder, err := q.uniqueHolder(tr, rs[i].uniq)
			if err != nil {
				return nil, err
			}
			if !holder.IsZero() {
				out[i] = Enqueued{ID: holder, Duplicate: true}
				continue
			}
			seenUniq[uk] = j.ID
		}
		seenID[j.ID] = true
		q.write(tr, now, j)
		out[i] = Enqueued{ID: j.ID, RunAt: j.runAt}
	}
	if err := q.wakeSleepers(tr, now, jobs, out, sleepers); err != nil {
		return nil, err
	}
	// Register new task types for inspection; cache a type only once it is
	// seen stored, so an aborted transaction cannot leave it unregistered.
	if err := q.registerTypes(tr, types); err != nil {
		return nil, err
	}
	return out, nil
}

// uniqueHolder returns the pending or running job holding a unique key, or
// the zero ID when the key is free (absent, or left by a dead job).
func (q *Queue) uniqueHolder(tr kv.Transaction, f kv.Future[[]byte]) (ID, error) {
	v, err := f.Get()
	if err != nil || v == nil {
		return ID{}, err
	}
	if len(v) != len(ID{}) {
		return ID{}, fmt.Errorf("%w: unique key value of %d bytes", ErrCorrupt, len(v))
	}
	id := ID(v)
	rv, err := tr.Get(q.k.jobKey(id)).Get()
	if err != nil || rv == nil {
		return ID{}, err
	}
	var r record
	if err := r.unmarshal(rv); err != nil {
		return ID{}, err
	}
	if r.State == stateDead {
		return ID{}, nil
	}
	return id, nil
}

// write places a new job.
func (q *Queue) write(tr kv.Transaction, now time.Time, j job) {
	key, lane, vestMs := q.k.place(j.TaskType, j.Priority, j.runAt, j.ID, q.lanes)
	sv := schedValue{MaxAttempts: int64(j.MaxAttempts), UniqueKey: j.UniqueKey, Flags: q.waitFlag(j.NewJob)}
	tr.Set(key, sv.marshal())
	r := record{
		TaskType: j.TaskType, Priority: int64(j.Priority), ItemSpace: j.ItemSpace, Payload: j.Payload,
		MaxAttempts: int64(j.MaxAttempts), UniqueKey: j.UniqueKey, CreatedAtMs: now.UnixMilli(),
		PlacedAtMs: vestMs, PlacedLane: int64(lane), Flags: sv.Flags,
	}
	tr.Set(q.k.jobKey(j.ID), r.marshal())
	tr.Set(q.k.markKey(j.ID), nil)
	if j.UniqueKey != "" {
		tr.Set(q.k.uniqKey(j.TaskType, j.UniqueKey), j.ID[:])
	}
}

// enqueueBatchBytes bounds one standalone enqueue transaction, far under
// FDB's 10 MB limit and its 1 MB advice.
const enqueueBatchBytes = 512 << 10

// Enqueue enqueues jobs in transactions of its own, as many per transaction
// as fit in about 512 KB. IDs are fixed before the retry loop, so a retry
// after commit_unknown_result never creates a second job. If a later batch
// fails, the earlier ones stay committed: the result lists them, and
// enqueueing the same NewJobs (same IDs) again is safe.
func (q *Queue) Enqueue(ctx context.Context, jobs ...NewJob) ([]Enqueued, error) {
	now := q.Now()
	prepared := make([]job, len(jobs))
	for i, in := range jobs {
		j, err := q.prepare(now, in)
		if err != nil {
			return nil, fmt.Errorf("quick: enqueue job %d (%s): %w", i, in.TaskType, err)
		}
		prepared[i] = j
	}
	if q.opts.Layout == LayoutZones {
		return q.zenqueue(ctx, now, prepared)
	}
	var out []Enqueued
	for start := 0; start < len(prepared); {
		end, size := start, 0
		for end < len(prepared) && (end == start || size+jobBytes(prepared[end]) <= enqueueBatchBytes) {
			size += jobBytes(prepared[end])
			end++
		}
		var res []Enqueued
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			var prev map[ID]bool
			if maybeCommitted {
				prev = map[ID]bool{}
				for _, r := range res {
					if !r.Duplicate {
						prev[r.ID] = true
					}
				}
			}
			var err error
			res, err = q.enqueueTx(tr, now, prepared[start:end], prev)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("quick: enqueue: %w", err)
		}
		out = append(out, res...)
		start = end
	}
	return out, nil
}

func jobBytes(j job) int {
	return 200 + 2*len(j.TaskType) + len(j.Payload) + 2*len(j.UniqueKey) + len(j.ItemSpace)
}

// readSleepers reads the sleep key of each task type with a job that vests
// now, so the enqueue can tell whether a worker sleeps on the wake key. The
// read is serializable on purpose: a worker that registers its sleep between
// this enqueue's read and its commit makes the enqueue conflict and retry,
// now seeing the sleeper and waking it. With a snapshot read that enqueue
// would neither wake the worker nor be seen by the claim the worker made
// just before sleeping. Registrations are one per idle spell of a worker,
// so the retries this causes are rare.
func (q *Queue) readSleepers(tr kv.Transaction, now time.Time, jobs []job) map[string]kv.Future[[]byte] {
	if q.opts.DisableWakeOnEnqueue {
		return nil
	}
	var out map[string]kv.Future[[]byte]
	for _, j := range jobs {
		if j.runAt.After(now) || out[j.TaskType] != nil {
			continue
		}
		if out == nil {
			out = map[string]kv.Future[[]byte]{}
		}
		out[j.TaskType] = tr.Get(q.k.sleepKey(j.TaskType))
	}
	return out
}

// wakeSleepers adds 1 to the wake key of each task type that got a new job
// vesting now while a worker sleeps on it: one atomic add, and nothing at
// all when no worker sleeps.
func (q *Queue) wakeSleepers(tr kv.Transaction, now time.Time, jobs []job, out []Enqueued, sleepers map[string]kv.Future[[]byte]) error {
	woken := map[string]bool{}
	for i, j := range jobs {
		f := sleepers[j.TaskType]
		if f == nil || woken[j.TaskType] || out[i].Duplicate || j.runAt.After(now) {
			continue
		}
		v, err := f.Get()
		if err != nil {
			return err
		}
		woken[j.TaskType] = true
		if len(v) == 8 && int64(binary.LittleEndian.Uint64(v)) > now.UnixMilli() {
			tr.Add(q.k.wakeKey(j.TaskType), le64(1))
		}
	}
	return nil
}

// registerTypes registers the task types whose registration reads are in
// types (s1_enqueue.go, enqueue.go); a type is cached only once it is seen
// stored, so an aborted transaction cannot leave it unregistered.
func (q *Queue) registerTypes(tr kv.Transaction, types map[string]kv.Future[[]byte]) error {
	for t, f := range types {
		v, err := f.Get()
		if err != nil {
			return err
		}
		if v != nil {
			q.knownTypes.Store(t, true)
		} else {
			tr.Set(q.k.typeKey(t), nil)
		}
	}
	return nil
}
