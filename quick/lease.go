package quick

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/leasetoken"
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

	// zl is where the job is and what its key holds (zone.go).
	zl *zoneLease
}

// The token stays unexported; worker and the internal tools read it
// through internal/leasetoken.
func init() {
	leasetoken.Of = func(a any) uint64 { return a.(Lease).token() }
}

// Lane returns the hash lane of its zone that the job's key is in.
func (l Lease) Lane() int {
	if l.zl == nil {
		return 0
	}
	return l.zl.lane.lane
}

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
	// AckCancel ends the job as cancelled (Error, if any, is the reason):
	// it is deleted, as a completion, unless its retention keeps a
	// finished record of it (StateCancelled). It is not a dead letter.
	AckCancel
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
	case AckCancel:
		return "cancel"
	}
	return "unknown"
}

// Ack ends or re-places a leased job.
type Ack struct {
	Lease Lease
	Kind  AckKind
	// Error is the failure text for AckFail and AckDeadLetter, the reason
	// for AckCancel (truncated to 2,000 bytes).
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
// Keys: reads each job key (serializable: a concurrent claim of the same
// job conflicts) and, for short leases, each lane's state once. Complete
// and cancel clear the job key (and its blobs, unique key, lookup index,
// and set the outcome of a waitable job and the finished record of a job
// with retention: retainTx); fail, snooze and release clear it and set it
// at its new vesting time (moving the lane's pointer earlier when needed);
// a dead letter writes what zoneDeadLetterTx lists (deadletter.go).
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
	// finBytes bounds what a completion or cancel writes for the job's
	// finished record (retention.go): 0 without retention.
	finBytes int
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
		case AckComplete, AckCancel:
			if zl := a.Lease.zl; zl != nil {
				p.finBytes = q.finishedCost(a.Lease.TaskType, &zl.v, a.Error)
			}
		}
		out[i] = p
	}
	return out
}

// ackTx applies acks (ack.go). prevApplied marks the acks an earlier
// attempt applied when that attempt may have committed: a lost lease there
// may be this call's own earlier commit, which zackApplied recognises.
func (q *Queue) ackTx(tr kv.Transaction, acks []plannedAck, prevApplied []bool) ([]AckResult, error) {
	return q.zackTx(tr, acks, prevApplied)
}

func (q *Queue) checkAck(a Ack) error {
	if a.Lease.zl == nil {
		return fmt.Errorf("%w: the lease was not returned by Claim", ErrInvalidOption)
	}
	switch a.Kind {
	case AckComplete, AckFail, AckRelease, AckDeadLetter, AckCancel:
	case AckSnooze:
		if a.Delay < 0 {
			return fmt.Errorf("%w: negative snooze %v", ErrInvalidDelay, a.Delay)
		}
	default:
		return fmt.Errorf("%w: unknown ack kind %d", ErrInvalidOption, a.Kind)
	}
	return nil
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
func ackCost(a plannedAck) int { return zackCost(a) }

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
// It moves the job key; a payload or checkpoint over InlinePayload stays
// where it is, in its own key.
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
// Keys: per lease, reads the job key (and a short lease's lane state) and
// moves it (zextendMany, extend.go). Bound: 500 leases and about 1 MB a
// transaction (zmoveSplit).
func (q *Queue) ExtendMany(ctx context.Context, ls []Lease, d time.Duration) ([]Lease, []error, error) {
	if err := q.checkLease(d); err != nil {
		return nil, nil, err
	}
	return q.zextendMany(ctx, ls, d)
}

// Checkpoint stores progress bytes in the job, so whoever holds it next
// resumes from there, and extends the lease to now + d in the same
// transaction. The checkpoint is its own key: storing it never rewrites the
// payload.
//
// Keys: those of zcheckpoint (extend.go): the job key read, cleared and set
// at the new deadline; Z (4, id) set or cleared.
func (q *Queue) Checkpoint(ctx context.Context, l Lease, state []byte, d time.Duration) (Lease, error) {
	if len(state) > MaxCheckpointLen {
		return l, fmt.Errorf("quick: checkpoint of %d bytes: %w (at most %d)", len(state), ErrTooLarge, MaxCheckpointLen)
	}
	if err := q.checkLease(d); err != nil {
		return l, err
	}
	if l.zl == nil {
		return l, fmt.Errorf("%w: the lease was not returned by a claim", ErrInvalidOption)
	}
	return q.zcheckpoint(ctx, l, state, d)
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
