package quick

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Retention of finished jobs. A job finishes by a transaction that clears
// its key (a completion, a cancel); by default nothing of it is left. A job
// with retention (TaskTypeOptions.Retain, or its own NewJob.Retain) leaves
// a finished record S (1, "f", id), written by that same transaction, with
// its outcome, attempts, the errors of its last failed attempts, its times
// and, when it was kept inline (InlinePayload bytes or less), its payload;
// and an expiry index entry S (1, "fx", expireMs, id) by which the cleanup
// duty (PurgeFinished) finds the records whose time is up, oldest first,
// without reading the others. Get, Outcome and Wait read the record.
//
// Errors of earlier attempts: a job key keeps only its last error. A job
// with retention also keeps, in its key's value, the errors of its last
// maxRetainedErrors failed attempts (each at most maxErrorLen bytes), added
// by the ack that fails it; so the history costs nothing to jobs without
// retention, and a failing retained job carries up to about 10 kB more
// through its later claims. A failure the queue never sees (a lease that
// lapsed) leaves no entry.
//
// Dead letters keep their dead-letter record (deadrecord.go): it already
// holds what a finished record would, and Requeue needs the payload whatever
// its size. A dead letter that is cancelled becomes a finished record.

const (
	// maxRetainedErrors bounds the errors a retained job keeps.
	maxRetainedErrors = 5
	// maxRetainedPayload is the largest payload a finished record keeps:
	// the payloads kept inline in the job key, so that writing the record
	// reads nothing more. A larger one is dropped (its size is kept).
	maxRetainedPayload = InlinePayload
	// MaxRetain bounds a retention (TaskTypeOptions.Retain, NewJob.Retain).
	MaxRetain = 366 * 24 * time.Hour
	// purgeFinishedBatch bounds one purge transaction: this many expiry
	// entries read, and as many finished records read and cleared (each
	// record at most about 13 kB: about 7 MB read at worst, nothing written
	// but clears).
	purgeFinishedBatch = 500
)

// AttemptError is the error of one failed attempt of a job.
type AttemptError struct {
	Attempt int       // the attempt's number, from 1
	At      time.Time // when it failed
	Error   string    // at most 2,000 bytes
}

func appendHistory(b []byte, num protowire.Number, h []AttemptError) []byte {
	for _, e := range h {
		var m []byte
		m = wire.AppendVarint(m, 1, uint64(e.Attempt))
		m = wire.AppendVarint(m, 2, uint64(e.At.UnixMilli()))
		m = wire.AppendString(m, 3, e.Error)
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}

// historyLen bounds the encoded size of h.
func historyLen(h []AttemptError) int {
	n := 0
	for _, e := range h {
		n += 32 + len(e.Error)
	}
	return n
}

func decodeAttemptError(typ protowire.Type, raw []byte) (AttemptError, error) {
	if typ != protowire.BytesType {
		return AttemptError{}, fmt.Errorf("%w: attempt error has wire type %d", ErrCorrupt, typ)
	}
	var e AttemptError
	var atMs int64
	err := walkValue(raw, func(num protowire.Number, _ protowire.Type, r []byte, x uint64) error {
		switch num {
		case 1:
			e.Attempt = int(int64(x))
		case 2:
			atMs = int64(x)
		case 3:
			e.Error = string(r)
		}
		return nil
	})
	e.At = time.UnixMilli(atMs)
	if err == nil && (e.Attempt < 0 || len(e.Error) > maxErrorLen) {
		err = fmt.Errorf("%w: attempt error (attempt %d, %d bytes)", ErrCorrupt, e.Attempt, len(e.Error))
	}
	return e, err
}

// retainOf is how long a finished job of taskType whose value holds
// retainMs (NewJob.Retain) is kept: 0 for not at all.
func (q *Queue) retainOf(taskType string, retainMs int64) time.Duration {
	switch {
	case retainMs > 0:
		return time.Duration(retainMs) * time.Millisecond
	case retainMs < 0:
		return 0
	}
	return q.opts.TaskTypes[taskType].Retain
}

// checkRetain refuses a retention over MaxRetain.
func checkRetain(d time.Duration) error {
	if d > MaxRetain {
		return fmt.Errorf("%w: retention %v is over MaxRetain %v", ErrInvalidOption, d, MaxRetain)
	}
	return nil
}

// noteFailure adds a failed attempt's error to a retained job's history,
// keeping the last maxRetainedErrors; for other jobs it does nothing.
func (q *Queue) noteFailure(taskType string, v *zjobValue, now time.Time, errText string) {
	if q.retainOf(taskType, v.RetainMs) <= 0 {
		return
	}
	h := append(v.History, AttemptError{Attempt: int(v.Attempt), At: now, Error: truncate(errText, maxErrorLen)})
	if n := len(h) - maxRetainedErrors; n > 0 && !mutant.On("quick.finished-history") {
		h = h[n:]
	}
	v.History = h
}

// finishedRecord is the value of S (1, "f", id).
type finishedRecord struct {
	Kind         OutcomeKind // completed or cancelled
	TaskType     string
	ItemSpace    string
	Priority     Priority
	Attempts     int64
	MaxAttempts  int64
	CreatedAtMs  int64
	StartedAtMs  int64 // when its last run was leased; 0 if unknown (short-job mode, never run)
	FinishedAtMs int64
	ExpireAtMs   int64
	Errors       []AttemptError
	LastError    string
	Payload      []byte // kept when at most maxRetainedPayload bytes
	PayloadSize  int64  // its size when known
	UniqueKey    string
	Flags        uint64 // flagWaitable
}

func (f *finishedRecord) marshal() []byte {
	b := make([]byte, 0, 64+len(f.TaskType)+len(f.ItemSpace)+historyLen(f.Errors)+len(f.LastError)+len(f.Payload)+len(f.UniqueKey))
	b = wire.AppendVarint(b, 1, uint64(f.Kind))
	b = wire.AppendString(b, 2, f.TaskType)
	b = wire.AppendString(b, 3, f.ItemSpace)
	b = wire.AppendVarint(b, 4, uint64(f.Priority))
	b = wire.AppendVarint(b, 5, uint64(f.Attempts))
	b = wire.AppendVarint(b, 6, uint64(f.MaxAttempts))
	b = wire.AppendVarint(b, 7, uint64(f.CreatedAtMs))
	b = wire.AppendVarint(b, 8, uint64(f.StartedAtMs))
	b = wire.AppendVarint(b, 9, uint64(f.FinishedAtMs))
	b = wire.AppendVarint(b, 10, uint64(f.ExpireAtMs))
	b = appendHistory(b, 11, f.Errors)
	b = wire.AppendString(b, 12, f.LastError)
	b = wire.AppendBytes(b, 13, f.Payload)
	b = wire.AppendVarint(b, 14, uint64(f.PayloadSize))
	b = wire.AppendString(b, 15, f.UniqueKey)
	b = wire.AppendVarint(b, 16, f.Flags)
	return b
}

// decodeFinished decodes a finished record and checks it: anything a
// finishing transaction could not have written is ErrCorrupt.
func decodeFinished(id ID, b []byte) (finishedRecord, error) {
	var f finishedRecord
	err := walkValue(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			f.Kind = OutcomeKind(int64(x))
		case 2:
			f.TaskType = string(raw)
		case 3:
			f.ItemSpace = string(raw)
		case 4:
			f.Priority = Priority(int64(x))
		case 5:
			f.Attempts = int64(x)
		case 6:
			f.MaxAttempts = int64(x)
		case 7:
			f.CreatedAtMs = int64(x)
		case 8:
			f.StartedAtMs = int64(x)
		case 9:
			f.FinishedAtMs = int64(x)
		case 10:
			f.ExpireAtMs = int64(x)
		case 11:
			e, err := decodeAttemptError(typ, raw)
			if err != nil {
				return err
			}
			if len(f.Errors) == maxRetainedErrors {
				return fmt.Errorf("%w: more than %d attempt errors", ErrCorrupt, maxRetainedErrors)
			}
			f.Errors = append(f.Errors, e)
		case 12:
			f.LastError = string(raw)
		case 13:
			f.Payload = append([]byte(nil), raw...)
		case 14:
			f.PayloadSize = int64(x)
		case 15:
			f.UniqueKey = string(raw)
		case 16:
			f.Flags = x
		}
		return nil
	})
	if err != nil {
		return finishedRecord{}, fmt.Errorf("quick: finished job %s: %w", id, err)
	}
	p, perr := f.Priority.normalize()
	switch {
	case f.Kind != OutcomeCompleted && f.Kind != OutcomeCancelled:
		err = fmt.Errorf("outcome %d", int64(f.Kind))
	case validTaskType(f.TaskType) != nil:
		err = fmt.Errorf("task type %q", f.TaskType)
	case perr != nil || p != f.Priority || f.Priority == 0:
		err = fmt.Errorf("priority %d", int64(f.Priority))
	case f.Attempts < 0 || f.MaxAttempts < 0 || f.PayloadSize < 0:
		err = fmt.Errorf("attempts %d of %d, payload size %d", f.Attempts, f.MaxAttempts, f.PayloadSize)
	case f.CreatedAtMs < 0 || f.StartedAtMs < 0 || f.FinishedAtMs <= 0 || f.ExpireAtMs < f.FinishedAtMs:
		err = fmt.Errorf("times created %d, started %d, finished %d, expires %d", f.CreatedAtMs, f.StartedAtMs, f.FinishedAtMs, f.ExpireAtMs)
	case len(f.Payload) > maxRetainedPayload || len(f.LastError) > maxErrorLen:
		err = fmt.Errorf("payload of %d bytes, last error of %d", len(f.Payload), len(f.LastError))
	}
	if err != nil {
		return finishedRecord{}, fmt.Errorf("%w: finished job %s: %w", ErrCorrupt, id, err)
	}
	return f, nil
}

func (q *Queue) finSpace() tuple.Subspace  { return q.k.root.Sub("f") }
func (q *Queue) finXSpace() tuple.Subspace { return q.k.root.Sub("fx") }

func (q *Queue) finKey(id ID) []byte { return q.finSpace().Pack(tuple.Tuple{tuple.UUID(id)}) }

func (q *Queue) finXKey(expireMs int64, id ID) []byte {
	return q.finXSpace().Pack(tuple.Tuple{expireMs, tuple.UUID(id)})
}

// parseFinX reads an expiry index key.
func (q *Queue) parseFinX(key []byte) (int64, ID, error) {
	t, err := q.finXSpace().Unpack(key)
	if err != nil {
		return 0, ID{}, fmt.Errorf("%w: finished expiry key: %w", ErrCorrupt, err)
	}
	if len(t) != 2 {
		return 0, ID{}, fmt.Errorf("%w: finished expiry key has %d elements, want 2", ErrCorrupt, len(t))
	}
	ms, ok0 := t[0].(int64)
	id, ok1 := t[1].(tuple.UUID)
	if !ok0 || !ok1 {
		return 0, ID{}, fmt.Errorf("%w: finished expiry key %v has wrong elements", ErrCorrupt, t)
	}
	return ms, ID(id), nil
}

// finish is what the transaction that ends a job knows of it, for its
// finished record.
type finish struct {
	id        ID
	kind      OutcomeKind
	taskType  string
	itemSpace string
	prio      Priority
	v         *zjobValue // the job's value as it ends (Attempt: runs started)
	payload   []byte     // the whole payload, or nil when not at hand
	reason    string     // a cancel's reason (worker.Cancel), kept as its last error
	now       time.Time
}

// retainTx writes the finished record of a job with retention in the
// transaction that ends it; for other jobs it writes nothing (a map
// lookup, no read).
//
// Keys: sets S (1, "f", id) (about 150 bytes, plus the kept payload, up to
// 1 kB, and errors, up to 10 kB) and S (1, "fx", expireMs, id) (empty).
func (q *Queue) retainTx(tr kv.Transaction, f finish) {
	d := q.retainOf(f.taskType, f.v.RetainMs)
	if d <= 0 {
		return
	}
	v := f.v
	created := v.CreatedAtMs
	if created == 0 {
		created = f.id.Time().UnixMilli()
	}
	nowMs := f.now.UnixMilli()
	rec := finishedRecord{
		Kind: f.kind, TaskType: f.taskType, ItemSpace: f.itemSpace, Priority: f.prio,
		Attempts: v.Attempt, MaxAttempts: v.MaxAttempts, CreatedAtMs: created, StartedAtMs: v.LeasedAtMs,
		FinishedAtMs: nowMs, ExpireAtMs: nowMs + d.Milliseconds(),
		Errors: v.History, LastError: v.LastError, UniqueKey: v.UniqueKey, Flags: v.Flags & flagWaitable,
	}
	if f.reason != "" {
		rec.LastError = truncate(f.reason, maxErrorLen)
		rec.Errors = append(rec.Errors, AttemptError{Attempt: int(v.Attempt), At: f.now, Error: rec.LastError})
		if n := len(rec.Errors) - maxRetainedErrors; n > 0 {
			rec.Errors = rec.Errors[n:]
		}
	}
	switch {
	case v.Flags&flagBlob == 0:
		rec.Payload, rec.PayloadSize = v.Payload, int64(len(v.Payload))
	case f.payload != nil:
		rec.PayloadSize = int64(len(f.payload))
	}
	tr.Set(q.finKey(f.id), rec.marshal())
	tr.Set(q.finXKey(rec.ExpireAtMs, f.id), nil)
}

// finishedCost bounds the bytes retainTx writes for a job of taskType
// whose value is v: 0 without retention.
func (q *Queue) finishedCost(taskType string, v *zjobValue, reason string) int {
	if q.retainOf(taskType, v.RetainMs) <= 0 {
		return 0
	}
	return 256 + len(taskType) + 2*MaxItemSpaceLen + len(v.UniqueKey) + len(v.LastError) +
		historyLen(v.History) + len(reason) + 32 + maxRetainedPayload
}

// finishedInfo describes a finished record for Get.
func finishedInfo(id ID, f *finishedRecord) JobInfo {
	st := StateCompleted
	if f.Kind == OutcomeCancelled {
		st = StateCancelled
	}
	return JobInfo{
		ID: id, TaskType: f.TaskType, Priority: f.Priority, ItemSpace: f.ItemSpace, State: st,
		Attempt: int(f.Attempts), MaxAttempts: int(f.MaxAttempts), CreatedAt: time.UnixMilli(f.CreatedAtMs),
		LastError: f.LastError, UniqueKey: f.UniqueKey, Payload: f.Payload, Waitable: f.Flags&flagWaitable != 0,
		StartedAt: msTime(f.StartedAtMs), FinishedAt: time.UnixMilli(f.FinishedAtMs), ExpiresAt: time.UnixMilli(f.ExpireAtMs),
		Errors: f.Errors, PayloadSize: int(f.PayloadSize),
	}
}

// msTime is ms as a time, or the zero time for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// outcomeOfFinished is the outcome a finished record tells.
func outcomeOfFinished(id ID, f *finishedRecord) Outcome {
	return Outcome{ID: id, Kind: f.Kind, FinishedAt: time.UnixMilli(f.FinishedAtMs), Attempts: int(f.Attempts), Error: f.LastError}
}

// retainMsOf is NewJob.Retain as the job value keeps it: 0 to follow the
// task type, -1 for none, else milliseconds (at least 1).
func retainMsOf(d time.Duration) int64 {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return 0
	}
	return max(d.Milliseconds(), 1)
}
