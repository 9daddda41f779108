package quick

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// extendBatch bounds one ExtendMany transaction.
const extendBatch = 500

// Lease is a claimed job: what its handler needs, and the lease that lets its
// holder change it. A Lease is a value; operations that move the job (Extend,
// Checkpoint) return the new one. Every operation checks that the job's
// schedule key still exists and carries this lease's token, so nothing a
// worker does after losing its lease changes a job that someone else holds.
// A holder whose lease expired but whom nobody has replaced still holds the
// key and token, and may still complete: the job ran once, which is what
// at-least-once promises.
type Lease struct {
	ID          ID
	TaskType    string
	Priority    Priority
	ItemSpace   string
	Payload     []byte
	Checkpoint  []byte
	Attempt     int // this run's number, from 1
	MaxAttempts int
	CreatedAt   time.Time
	VestedAt    time.Time // when the job last became runnable
	Deadline    time.Time // when the lease lapses unless extended
	Holder      string
	LastError   string // the previous attempt's error, if it failed

	key  []byte
	lane int
	sv   schedValue
	// zl is set for a job of the zones layout (schema 2); key, lane and sv
	// then describe nothing.
	zl *zoneLease
}

// The token stays unexported; worker and the internal tools read it
// through internal/leasetoken.
func init() {
	leasetoken.Of = func(a any) uint64 { return a.(Lease).token() }
}

// Lane returns the lane the job's schedule key is in now.
func (l Lease) Lane() int { return l.lane }

// AckKind says how a lease ends or changes.
type AckKind int

// The lease operations.
const (
	// AckComplete deletes the job.
	AckComplete AckKind = iota + 1
	// AckFail counts the attempt, keeps the error and retries after a
	// backoff, or dead-letters the job when its attempts are spent.
	AckFail
	// AckSnooze runs the job again after Delay without spending an attempt.
	AckSnooze
	// AckRelease hands the job back to run now, without spending an attempt.
	AckRelease
	// AckDeadLetter moves the job to the dead letters at once.
	AckDeadLetter
)

func (k AckKind) String() string {
	switch k {
	case AckComplete:
		return "complete"
	case AckFail:
		return "fail"
	case AckSnooze:
		return "snooze"
	case AckRelease:
		return "release"
	case AckDeadLetter:
		return "dead-letter"
	}
	return "unknown"
}

// Ack ends or re-places a leased job.
type Ack struct {
	Lease Lease
	Kind  AckKind
	// Error is the failure text for AckFail and AckDeadLetter (truncated to
	// 2,000 bytes).
	Error string
	// Delay is the snooze for AckSnooze; for AckFail it replaces the
	// backoff when positive.
	Delay time.Duration
}

// AckResult is what one ack did.
type AckResult struct {
	// Err is nil, or a LeaseLostError when the lease was gone.
	Err error
	// Dead is set when the job went to the dead letters.
	Dead bool
	// RunAt is when a failed, snoozed or released job runs next.
	RunAt time.Time
}

// AckTx applies acks inside the caller's transaction, so a handler whose work
// is FDB writes completes its job in the same transaction as that work: the
// effect and the completion commit together or not at all. A lost lease
// fails only its own ack (AckResult.Err); the others still apply, and the
// error returned joins every lost lease's *LeaseLostError (errors.Is(err,
// ErrLeaseLost)) next to the complete results, so a caller that checks only
// the error still learns of them. Any other error comes with no results.
//
// Keys: reads S(1,"s",...) of each lease (serializable: a concurrent claim of
// the same job conflicts); for AckFail, AckSnooze, AckRelease and
// AckDeadLetter also S(1,"j",id). Complete clears S(1,"s",...), S(1,"j",id),
// and S(1,"c",id) and S(1,"u",...) when present; the others clear the
// schedule key and set a new one and the record (dead letters: the record,
// S(1,"d",type,ms,id) and an atomic add to S(1,"dn",type)).
func (q *Queue) AckTx(tr kv.Transaction, acks ...Ack) ([]AckResult, error) {
	for i, a := range acks {
		if err := q.checkAck(a); err != nil {
			return nil, fmt.Errorf("quick: ack %d: %w", i, err)
		}
	}
	res, err := q.ackTx(tr, q.plan(acks), nil)
	if err != nil {
		return nil, err
	}
	return res, lostLeases(res)
}

// lostLeases joins the lost leases of results, each with its ack's index;
// nil when none was lost.
func lostLeases(res []AckResult) error {
	var errs []error
	for i, r := range res {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("quick: ack %d: %w", i, r.Err))
		}
	}
	return errors.Join(errs...)
}

// backoff is the retry delay of a job of taskType that failed on attempt.
func (q *Queue) backoff(taskType string, attempt int) time.Duration {
	if b := q.opts.TaskTypes[taskType].Backoff; b != nil {
		return b(attempt)
	}
	return q.opts.Backoff(attempt)
}

// plannedAck is an ack with its outcome fixed before the retry loop: where a
// re-placed job goes, so a retry can recognise its own earlier commit.
type plannedAck struct {
	Ack
	now   time.Time
	runAt time.Time // for fail (unless dead), snooze and release
}

func (q *Queue) plan(acks []Ack) []plannedAck {
	now := q.Now()
	out := make([]plannedAck, len(acks))
	for i, a := range acks {
		p := plannedAck{Ack: a, now: now}
		switch a.Kind {
		case AckFail:
			d := a.Delay
			if d <= 0 {
				d = q.backoff(a.Lease.TaskType, a.Lease.Attempt)
			}
			p.runAt = now.Add(d)
		case AckSnooze:
			p.runAt = now.Add(a.Delay)
		case AckRelease:
			p.runAt = now
		}
		out[i] = p
	}
	return out
}

// ackTx applies acks. prevApplied marks the acks an earlier attempt applied
// when that attempt may have committed: a lost lease there may be this
// call's own earlier commit, which ackApplied recognises.
func (q *Queue) ackTx(tr kv.Transaction, acks []plannedAck, prevApplied []bool) ([]AckResult, error) {
	if hasZones(acks) {
		// Leases of the zones layout (lanelease.go).
		return q.ackMixed(tr, acks, prevApplied)
	}
	scheds := make([]kv.Future[[]byte], len(acks))
	for i, a := range acks {
		scheds[i] = leaseRead(tr).Get(a.Lease.key)
	}
	recs := make([]kv.Future[[]byte], len(acks))
	for i, a := range acks {
		if a.Kind != AckComplete || (prevApplied != nil && prevApplied[i]) {
			recs[i] = tr.Snapshot().Get(q.k.jobKey(a.Lease.ID))
		}
	}
	out := make([]AckResult, len(acks))
	for i, a := range acks {
		l, sv, err := q.hold(tr, scheds[i], a.Lease)
		if err == nil {
			a.Lease = l
		}
		if err != nil {
			if !IsLeaseLost(err) {
				return nil, err
			}
			out[i].Err = err
			if prevApplied != nil && prevApplied[i] {
				if res, ok, err := q.ackApplied(tr, a, recs[i]); err != nil {
					return nil, err
				} else if ok {
					out[i] = res
				}
			}
			continue
		}
		if a.Kind == AckComplete {
			q.completeTx(tr, a.Lease, sv)
			continue
		}
		rv, err := recs[i].Get()
		if err != nil {
			return nil, err
		}
		var rec record
		if rv != nil {
			if err := rec.unmarshal(rv); err != nil {
				return nil, fmt.Errorf("quick: job %s: %w", a.Lease.ID, err)
			}
		} else {
			// The record is gone while the schedule key stays: rebuild what
			// the lease knows rather than lose the job.
			rec = record{TaskType: a.Lease.TaskType, Priority: int64(a.Lease.Priority), ItemSpace: a.Lease.ItemSpace,
				Payload: a.Lease.Payload, MaxAttempts: sv.MaxAttempts, UniqueKey: sv.UniqueKey, CreatedAtMs: a.Lease.CreatedAt.UnixMilli()}
		}
		out[i] = q.replaceTx(tr, a, sv, &rec)
	}
	return out, nil
}

// ackApplied tells whether an earlier attempt of this ack committed: the
// outcome it planned is in the database.
func (q *Queue) ackApplied(tr kv.Transaction, a plannedAck, recF kv.Future[[]byte]) (AckResult, bool, error) {
	rv, err := recF.Get()
	if err != nil {
		return AckResult{}, false, err
	}
	var rec record
	if rv != nil {
		if err := rec.unmarshal(rv); err != nil {
			return AckResult{}, false, nil
		}
	}
	switch {
	case a.Kind == AckComplete:
		return AckResult{}, rv == nil, nil
	case rv != nil && rec.State == stateDead && rec.DeadAtMs == a.now.UnixMilli():
		return AckResult{Dead: true}, true, nil
	case a.Kind == AckDeadLetter:
		return AckResult{}, false, nil
	}
	key, _, vestMs := q.k.place(a.Lease.TaskType, a.Lease.Priority, a.runAt, a.Lease.ID, q.lanes)
	v, err := tr.Get(key).Get()
	if err != nil || v == nil {
		return AckResult{}, false, err
	}
	return AckResult{RunAt: time.UnixMilli(vestMs)}, true, nil
}

func (q *Queue) checkAck(a Ack) error {
	if a.Lease.key == nil && a.Lease.zl == nil {
		return fmt.Errorf("%w: the lease was not returned by Claim", ErrInvalidOption)
	}
	switch a.Kind {
	case AckComplete, AckFail, AckRelease, AckDeadLetter:
	case AckSnooze:
		if a.Delay < 0 {
			return fmt.Errorf("%w: negative snooze %v", ErrInvalidDelay, a.Delay)
		}
	default:
		return fmt.Errorf("%w: unknown ack kind %d", ErrInvalidOption, a.Kind)
	}
	return nil
}

// held checks that the lease still holds its job and returns the schedule
// value stored now.
func (q *Queue) held(f kv.Future[[]byte], l Lease) (schedValue, error) {
	v, err := f.Get()
	if err != nil {
		return schedValue{}, err
	}
	if v == nil {
		// The key is not where the lease says: the job was claimed by
		// another, extended, acked or cancelled.
		if !mutant.On("quick.moved-key") {
			return schedValue{}, &LeaseLostError{ID: l.ID, Reason: "moved"}
		}
		v = l.sv.marshal()
	}
	var sv schedValue
	if err := sv.unmarshal(v); err != nil {
		return schedValue{}, fmt.Errorf("quick: job %s: %w", l.ID, err)
	}
	// The key is where the lease says, but it may be another lease's: a
	// lease that lapsed, was claimed by another at exactly its deadline and
	// released, leaves an identical key. Only the token tells them apart.
	if sv.Token != l.sv.Token && !mutant.On("quick.token") {
		return schedValue{}, &LeaseLostError{ID: l.ID, Reason: "token"}
	}
	return sv, nil
}

// hold checks that the lease still holds its job, as held does, and finds
// the lease where the lease index says it is when its key moved: a renewal
// of this very lease may have committed with its outcome unknown to the
// holder (its context ended while the commit was in flight), leaving the
// holder with the old key. The token, unique per claim and kept by every
// extension, says the lease is the holder's own wherever its key is. It
// returns the lease as it stands.
func (q *Queue) hold(tr kv.Transaction, f kv.Future[[]byte], l Lease) (Lease, schedValue, error) {
	sv, err := q.held(f, l)
	var lost *LeaseLostError
	if err == nil || !errors.As(err, &lost) || lost.Reason != "moved" {
		return l, sv, err
	}
	iv, ierr := leaseRead(tr).Get(q.k.leaseKey(l.ID)).Get()
	if ierr != nil {
		return l, schedValue{}, ierr
	}
	if iv == nil {
		return l, schedValue{}, err
	}
	ms, derr := decodeLeaseIndex(iv)
	if derr != nil {
		return l, schedValue{}, err
	}
	lane := laneOf(l.TaskType, l.Priority, ms, l.ID, q.lanes)
	key := q.k.schedKey(l.TaskType, lane, l.Priority, ms, l.ID)
	if bytes.Equal(key, l.key) {
		return l, schedValue{}, err
	}
	moved := l
	moved.key, moved.lane = key, lane
	msv, merr := q.held(leaseRead(tr).Get(key), moved)
	if merr != nil {
		if IsLeaseLost(merr) {
			return l, schedValue{}, err
		}
		return l, schedValue{}, merr
	}
	moved.sv, moved.Deadline = msv, time.UnixMilli(ms)
	return moved, msv, nil
}

// leaseRead is what lease operations read their schedule key through: the
// transaction itself, so the read adds a read-conflict range and a claim
// or ack that moves the key meanwhile makes this commit fail.
func leaseRead(tr kv.Transaction) kv.ReadTransaction {
	if mutant.On("quick.conflict-range") {
		return tr.Snapshot()
	}
	return tr
}

func (q *Queue) completeTx(tr kv.Transaction, l Lease, sv schedValue) {
	q.recordOutcome(tr, l.ID, sv.Flags, OutcomeCompleted, sv.Attempt, "")
	tr.Clear(l.key)
	tr.Clear(q.k.jobKey(l.ID))
	tr.Clear(q.k.leaseKey(l.ID))
	if sv.hasCheckpoint() {
		tr.Clear(q.k.ckptKey(l.ID))
	}
	if sv.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(l.TaskType, sv.UniqueKey))
	}
}

// replaceTx carries out a fail, snooze, release or dead-letter.
func (q *Queue) replaceTx(tr kv.Transaction, a plannedAck, sv schedValue, rec *record) AckResult {
	errText := truncate(a.Error, maxErrorLen)
	switch a.Kind {
	case AckDeadLetter:
		q.deadLetterTx(tr, a.now, a.Lease.key, a.Lease.ID, sv, rec, errText)
		return AckResult{Dead: true}
	case AckFail:
		if sv.MaxAttempts > 0 && sv.Attempt >= sv.MaxAttempts {
			q.deadLetterTx(tr, a.now, a.Lease.key, a.Lease.ID, sv, rec, errText)
			return AckResult{Dead: true}
		}
		rec.LastError = errText
	case AckSnooze, AckRelease:
		sv.Attempt--
	}
	runAt := a.runAt
	if sv.Attempt < 0 {
		sv.Attempt = 0
	}
	sv.Token, sv.Holder, sv.LeasedAtMs = 0, "", 0
	key, lane, vestMs := q.k.place(a.Lease.TaskType, a.Lease.Priority, runAt, a.Lease.ID, q.lanes)
	tr.Clear(a.Lease.key)
	tr.Set(key, sv.marshal())
	tr.Clear(q.k.leaseKey(a.Lease.ID)) // the record says where it is now
	rec.PlacedAtMs, rec.PlacedLane, rec.Attempts = vestMs, int64(lane), sv.Attempt
	tr.Set(q.k.jobKey(a.Lease.ID), rec.marshal())
	return AckResult{RunAt: time.UnixMilli(vestMs)}
}

// deadLetterTx moves a job to the dead letters: its schedule key goes, its
// record stays (marked dead, with its payload and checkpoint, for inspection
// and requeue), and the dead-letter index gets a key ordered by time.
func (q *Queue) deadLetterTx(tr kv.Transaction, now time.Time, key []byte, id ID, sv schedValue, rec *record, errText string) {
	q.recordOutcome(tr, id, sv.Flags, OutcomeDeadLettered, sv.Attempt, errText)
	tr.Clear(key)
	rec.State = stateDead
	rec.DeadAtMs = now.UnixMilli()
	rec.LastError = errText
	rec.Attempts = sv.Attempt
	tr.Set(q.k.jobKey(id), rec.marshal())
	tr.Clear(q.k.leaseKey(id))
	tr.Set(q.k.deadKey(rec.TaskType, rec.DeadAtMs, id), nil)
	tr.Add(q.k.deadCountKey(rec.TaskType), le64(1))
	if sv.UniqueKey != "" {
		tr.Clear(q.k.uniqKey(rec.TaskType, sv.UniqueKey))
	}
}

// Ack applies acks in transactions of its own, split so that each stays far
// under FDB's limits: at most ackBatch acks and about ackBatchBytes of
// mutations a transaction (an ack that rewrites the record counts its
// payload; see ackCost). Releases at shutdown take the same path. It returns
// one result per ack; a lost lease fails only its own ack (AckResult.Err)
// and, when every transaction committed, the error returned joins the lost
// leases' *LeaseLostError (errors.Is(err, ErrLeaseLost)) next to the
// complete results: a lost lease cannot pass unnoticed. If a transaction
// fails, the results of the earlier ones are returned with its error (fewer
// results than acks): those acks applied.
func (q *Queue) Ack(ctx context.Context, acks ...Ack) ([]AckResult, error) {
	for i, a := range acks {
		if err := q.checkAck(a); err != nil {
			return nil, fmt.Errorf("quick: ack %d: %w", i, err)
		}
	}
	planned := q.plan(acks)
	out := make([]AckResult, 0, len(acks))
	for start := 0; start < len(acks); {
		end := ackSplit(planned, start)
		var res []AckResult
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			var prev []bool
			if maybeCommitted && res != nil {
				prev = make([]bool, len(res))
				for i, r := range res {
					prev[i] = r.Err == nil
				}
			}
			var err error
			res, err = q.ackTx(tr, planned[start:end], prev)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("quick: ack: %w", err)
		}
		out = append(out, res...)
		start = end
	}
	return out, lostLeases(out)
}

// Bounds of one ack transaction: at most ackBatch acks and ackBatchBytes of
// estimated mutations (the first ack always goes, and one ack is at most
// about 100 kB: a record is one FDB value). FDB advises transactions under
// 1 MB and refuses them over 10 MB (2101); complete, the common case, writes
// only clears, so 500 completes cost about 100 kB.
const (
	ackBatch      = 500
	ackBatchBytes = 1 << 20
)

// ackSplit returns the end of the batch of acks that starts at start.
func ackSplit(acks []plannedAck, start int) int {
	end, bytes := start, 0
	for end < len(acks) && end-start < ackBatch {
		c := ackCost(acks[end])
		if end > start && bytes+c > ackBatchBytes {
			break
		}
		bytes += c
		end++
	}
	return end
}

// ackCost bounds the mutation bytes of one ack: the keys it clears and sets
// (schedule, record, lease index, checkpoint, unique and dead-letter keys,
// each about as long as the schedule key) and, for an ack that rewrites the
// record, the record. A record holds what the lease holds (the payload
// never changes after enqueue) plus the error text.
func ackCost(a plannedAck) int {
	if a.Lease.zl != nil {
		return zackCost(a)
	}
	n := 256 + 8*len(a.Lease.key)
	if a.Kind == AckComplete {
		return n
	}
	return n + len(a.Lease.Payload) + len(a.Lease.ItemSpace) + len(a.Lease.TaskType) + len(a.Lease.sv.UniqueKey) +
		len(a.Lease.LastError) + min(len(a.Error), maxErrorLen) + len(a.Lease.sv.Holder)
}

// Complete deletes a finished job.
func (q *Queue) Complete(ctx context.Context, l Lease) error {
	return q.ackOne(ctx, Ack{Lease: l, Kind: AckComplete})
}

// CompleteTx deletes a finished job inside the caller's transaction. A
// lost lease is its error (a *LeaseLostError), and the caller's transaction
// should not commit its own effects as the job's.
func (q *Queue) CompleteTx(tr kv.Transaction, l Lease) error {
	return q.ackOneTx(tr, Ack{Lease: l, Kind: AckComplete})
}

// Fail records a failed attempt: the job runs again after its kind's
// backoff, or goes to the dead letters if it has spent its attempts
// (Get tells which). A lost lease is its error (a *LeaseLostError).
func (q *Queue) Fail(ctx context.Context, l Lease, errText string) error {
	return q.ackOne(ctx, Ack{Lease: l, Kind: AckFail, Error: errText})
}

// FailTx is Fail inside the caller's transaction.
func (q *Queue) FailTx(tr kv.Transaction, l Lease, errText string) error {
	return q.ackOneTx(tr, Ack{Lease: l, Kind: AckFail, Error: errText})
}

// Snooze runs the job again after d without spending an attempt.
func (q *Queue) Snooze(ctx context.Context, l Lease, d time.Duration) error {
	return q.ackOne(ctx, Ack{Lease: l, Kind: AckSnooze, Delay: d})
}

// SnoozeTx is Snooze inside the caller's transaction.
func (q *Queue) SnoozeTx(tr kv.Transaction, l Lease, d time.Duration) error {
	return q.ackOneTx(tr, Ack{Lease: l, Kind: AckSnooze, Delay: d})
}

// Release hands the job back to run now, without spending an attempt, as a
// worker does when it shuts down.
func (q *Queue) Release(ctx context.Context, l Lease) error {
	return q.ackOne(ctx, Ack{Lease: l, Kind: AckRelease})
}

// DeadLetter moves the job to the dead letters at once.
func (q *Queue) DeadLetter(ctx context.Context, l Lease, reason string) error {
	return q.ackOne(ctx, Ack{Lease: l, Kind: AckDeadLetter, Error: reason})
}

// DeadLetterTx is DeadLetter inside the caller's transaction.
func (q *Queue) DeadLetterTx(tr kv.Transaction, l Lease, reason string) error {
	return q.ackOneTx(tr, Ack{Lease: l, Kind: AckDeadLetter, Error: reason})
}

// ackOne applies one ack; its lost lease is the error itself.
func (q *Queue) ackOne(ctx context.Context, a Ack) error {
	res, err := q.Ack(ctx, a)
	if len(res) == 1 && res[0].Err != nil {
		return res[0].Err
	}
	return err
}

func (q *Queue) ackOneTx(tr kv.Transaction, a Ack) error {
	res, err := q.AckTx(tr, a)
	if len(res) == 1 && res[0].Err != nil {
		return res[0].Err
	}
	return err
}

// Extend moves the lease's deadline to now + d and returns the new lease.
// It rewrites only the small schedule key, never the payload or checkpoint.
func (q *Queue) Extend(ctx context.Context, l Lease, d time.Duration) (Lease, error) {
	ls, errs, err := q.ExtendMany(ctx, []Lease{l}, d)
	if err != nil {
		return l, err
	}
	return ls[0], errs[0]
}

// ExtendMany renews many leases in few transactions (500 a transaction). A
// lost lease fails only its own entry in errs, and its Lease comes back
// unchanged.
//
// Keys: per lease, reads S(1,"s",...) and clears it, sets the new one and
// the lease index S(1,"l",id). Bound: 500 leases a transaction, each a
// schedule key and value of at most about 1.2 kB (unique key 512 bytes,
// holder 256), so under 1 MB.
func (q *Queue) ExtendMany(ctx context.Context, ls []Lease, d time.Duration) ([]Lease, []error, error) {
	if err := q.checkLease(d); err != nil {
		return nil, nil, err
	}
	if hasZoneLeases(ls) {
		return q.extendMixed(ctx, ls, d)
	}
	out := make([]Lease, len(ls))
	errs := make([]error, len(ls))
	applied := make([]bool, len(ls))
	deadline := q.Now().Add(d)
	for start := 0; start < len(ls); start += extendBatch {
		end := min(start+extendBatch, len(ls))
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			fs := make([]kv.Future[[]byte], end-start)
			for i := range fs {
				fs[i] = leaseRead(tr).Get(ls[start+i].key)
			}
			for i, f := range fs {
				l := ls[start+i]
				l, sv, err := q.hold(tr, f, l)
				if err != nil {
					if !IsLeaseLost(err) {
						return err
					}
					out[start+i], errs[start+i] = l, err
					if maybeCommitted && applied[start+i] {
						if moved, ok, err := q.movedTo(tr, l, deadline); err != nil {
							return err
						} else if ok {
							out[start+i], errs[start+i] = moved, nil
						}
					}
					continue
				}
				out[start+i], errs[start+i] = q.moveTx(tr, l, sv, deadline), nil
				applied[start+i] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("quick: extend: %w", err)
		}
	}
	return out, errs, nil
}

// movedTo tells whether an earlier attempt moved the lease to deadline: the
// key it planned holds the lease's token.
func (q *Queue) movedTo(tr kv.Transaction, l Lease, deadline time.Time) (Lease, bool, error) {
	key, lane, _ := q.k.place(l.TaskType, l.Priority, deadline, l.ID, q.lanes)
	v, err := tr.Get(key).Get()
	if err != nil || v == nil {
		return l, false, err
	}
	var sv schedValue
	if sv.unmarshal(v) != nil || sv.Token != l.sv.Token {
		return l, false, nil
	}
	l.key, l.lane, l.sv = key, lane, sv
	l.Deadline = deadline.Truncate(time.Millisecond)
	return l, true, nil
}

// checkpointed tells whether an earlier attempt of a checkpoint committed:
// the lease (found by hold) sits at the key the checkpoint moves it to,
// having moved there from orig, or, when that is orig itself, the stored
// checkpoint is the one this call writes.
func (q *Queue) checkpointed(tr kv.Transaction, l, orig Lease, state []byte, deadline time.Time, maybe bool) (bool, error) {
	if !maybe || !bytes.Equal(l.key, q.k.placeKey(l.TaskType, l.Priority, deadline, l.ID, q.lanes)) {
		return false, nil
	}
	if !bytes.Equal(l.key, orig.key) {
		return true, nil
	}
	ck, err := tr.Get(q.k.ckptKey(l.ID)).Get()
	return err == nil && ck != nil && bytes.Equal(ck, state) && l.sv.hasCheckpoint(), err
}

// moveTx moves a held job's schedule key to a new deadline.
func (q *Queue) moveTx(tr kv.Transaction, l Lease, sv schedValue, deadline time.Time) Lease {
	key, lane, vestMs := q.k.place(l.TaskType, l.Priority, deadline, l.ID, q.lanes)
	if bytes.Equal(key, l.key) && sv == l.sv {
		// Already there, as it is: an earlier attempt of this very move
		// committed (found through the lease index), or the deadline is
		// the current one. Writing it again would change nothing.
		l.Deadline = deadline.Truncate(time.Millisecond)
		return l
	}
	tr.Clear(l.key)
	tr.Set(key, sv.marshal())
	tr.Set(q.k.leaseKey(l.ID), encodeLeaseIndex(vestMs))
	l.key, l.lane, l.sv = key, lane, sv
	l.Deadline = deadline.Truncate(time.Millisecond)
	return l
}

// Checkpoint stores progress bytes in the job, so whoever holds it next
// resumes from there, and extends the lease to now + d in the same
// transaction. The checkpoint is its own key: storing it never rewrites the
// payload.
//
// Keys: reads S(1,"s",...); sets S(1,"c",id); clears and sets S(1,"s",...).
func (q *Queue) Checkpoint(ctx context.Context, l Lease, state []byte, d time.Duration) (Lease, error) {
	if len(state) > MaxCheckpointLen {
		return l, fmt.Errorf("quick: checkpoint of %d bytes: %w (at most %d)", len(state), ErrTooLarge, MaxCheckpointLen)
	}
	if err := q.checkLease(d); err != nil {
		return l, err
	}
	if l.zl != nil {
		return q.zcheckpoint(ctx, l, state, d)
	}
	var out Lease
	deadline := q.Now().Add(d)
	applied := false
	orig := l
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		l, sv, err := q.hold(tr, leaseRead(tr).Get(l.key), l)
		if err != nil {
			if maybeCommitted && applied && IsLeaseLost(err) {
				moved, ok, merr := q.movedTo(tr, l, deadline)
				if merr != nil {
					return merr
				}
				if ok {
					out = moved
					out.Checkpoint = state
					return nil
				}
			}
			return err
		}
		done, err := q.checkpointed(tr, l, orig, state, deadline, maybeCommitted && applied)
		if err != nil {
			return err
		}
		if done {
			// The earlier attempt's checkpoint and move committed together.
			out = l
			out.Deadline = deadline.Truncate(time.Millisecond)
			out.Checkpoint = state
			return nil
		}
		tr.Set(q.k.ckptKey(l.ID), state)
		sv.Flags |= flagCheckpoint
		out = q.moveTx(tr, l, sv, deadline)
		out.Checkpoint = state
		applied = true
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("quick: checkpoint: %w", err)
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func le64(v int64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
	return b
}
