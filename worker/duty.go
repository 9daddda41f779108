package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Duty is a background chore of the queue that the running workers share
// with no leader: every Every, exactly one of them runs it. Each duty has a
// small record in the database, S(1,"duty",name), that says when it is next
// due and who runs it now; a worker takes it with a transaction that reads
// the record serializably and writes itself in as the holder until
// DutyLease from now, so of two workers taking it at once one commits and
// the other's read conflicts. The holder records the outcome when done (it
// shows in `quick stats`); a holder that dies leaves the record to expire.
//
// Run must be bounded: every transaction it makes must have a bound in keys
// and bytes, and a pass should finish well within DutyLease; what is left
// waits for the next pass. Two passes can overlap only when one outlives
// DutyLease or clocks disagree by more than it, so Run must be safe to run
// twice at once (every built-in and cron's repair are).
type Duty struct {
	// Name identifies the duty in the queue: 1 to 64 bytes of [a-z0-9./_~-].
	Name string
	// Every is how often the duty runs. Default 10 minutes.
	Every time.Duration
	// Run does one pass and reports what it did.
	Run func(ctx context.Context) (DutyReport, error)
}

// DutyReport is what one pass of a duty did.
type DutyReport struct {
	// Count is how many things the pass removed or restored; -1 when the
	// pass cannot count them (a range clear).
	Count int64 `json:"count"`
	// Detail says what Count counts, or what the pass did.
	Detail string `json:"detail,omitempty"`
}

// DutyLease is how long a worker holds a duty while it runs it; a pass is
// cancelled after it, and another worker may take the duty.
const DutyLease = time.Minute

// defaultDutyEvery is a duty's default period.
const defaultDutyEvery = 10 * time.Minute

// maxDutyRecords bounds the read of DutyStates.
const maxDutyRecords = 1000

var dutyName = regexp.MustCompile(`^[a-z0-9./_~-]{1,64}$`)

// AddDuty adds a duty to the worker's background duties, before Run. Adding
// a duty whose name is already there does nothing, so every handler
// registration of a package may add its duty.
func (w *Worker) AddDuty(d Duty) error {
	if !dutyName.MatchString(d.Name) {
		return fmt.Errorf("%w: duty name %q (want 1 to 64 bytes of [a-z0-9./_~-])", ErrInvalidConfig, d.Name)
	}
	if d.Run == nil {
		return fmt.Errorf("%w: duty %q has no Run", ErrInvalidConfig, d.Name)
	}
	if d.Every <= 0 {
		d.Every = defaultDutyEvery
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("add duty %s: %w", d.Name, ErrStarted)
	}
	if slices.ContainsFunc(w.duties, func(o Duty) bool { return o.Name == d.Name }) {
		return nil
	}
	w.duties = append(w.duties, d)
	return nil
}

// builtinDuties are the queue's own cleanup: the enqueue markers past the
// idempotency window (one range clear), the presence records of workers
// gone without a graceful stop (purgePresence), the finished records whose
// retention ended (quick.PurgeFinished: 500 a transaction, at most
// purgeFinishedLimit a pass; nothing to read when no task type retains
// jobs), and per registered task type the
// dead letters beyond Options.DeadRetention (quick.PurgeDead: 500 keys a
// transaction, at most purgeDeadLimit a pass).
func (w *Worker) builtinDuties() []Duty {
	q := w.q
	out := []Duty{{
		Name: "purge-markers", Every: defaultDutyEvery,
		Run: func(ctx context.Context) (DutyReport, error) {
			if err := q.PurgeMarkers(ctx); err != nil {
				return DutyReport{}, err
			}
			cut := q.Now().Add(-q.Options().IdempotencyWindow).UTC().Format(time.RFC3339)
			return DutyReport{Count: -1, Detail: "markers of IDs before " + cut + " cleared"}, nil
		},
	}}
	out = append(out, Duty{
		Name: "purge-presence", Every: defaultDutyEvery,
		Run: func(ctx context.Context) (DutyReport, error) {
			n, err := purgePresence(ctx, q)
			return DutyReport{Count: int64(n), Detail: "stale worker presence records cleared"}, err
		},
	})
	out = append(out, Duty{
		Name: "purge-finished", Every: defaultDutyEvery,
		Run: func(ctx context.Context) (DutyReport, error) {
			p, err := q.PurgeFinished(ctx, purgeFinishedLimit)
			d := "finished records past their retention purged"
			if p.Quarantined > 0 {
				d += fmt.Sprintf("; %d entries that did not decode quarantined", p.Quarantined)
			}
			return DutyReport{Count: int64(p.Purged + p.Quarantined), Detail: d}, err
		},
	})
	for _, r := range w.runners {
		taskType := r.taskType
		out = append(out, Duty{
			Name: "purge-dead/" + dutyNameOf(taskType), Every: defaultDutyEvery,
			Run: func(ctx context.Context) (DutyReport, error) {
				n, err := q.PurgeDead(ctx, taskType, q.Options().DeadRetention, purgeDeadLimit)
				return DutyReport{Count: int64(n), Detail: "dead letters of " + taskType + " purged"}, err
			},
		})
	}
	return out
}

// purgeDeadLimit bounds one pass of a purge-dead duty (20 transactions).
const purgeDeadLimit = 10_000

// purgeFinishedLimit bounds one pass of the purge-finished duty (20
// transactions).
const purgeFinishedLimit = 10_000

// dutyNameOf maps a task type into the duty name alphabet: the type itself
// when it fits, otherwise its letters that fit and a hash of the whole, so
// two task types never share a duty.
func dutyNameOf(taskType string) string {
	if dutyName.MatchString("purge-dead/" + taskType) {
		return taskType
	}
	b := []byte(taskType)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		default:
			b[i] = '_'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	h := fnv.New32a()
	h.Write([]byte(taskType))
	return fmt.Sprintf("%s~%08x", b, h.Sum32())
}

// DutyState is a duty's record: its schedule, its holder, and its last pass.
type DutyState struct {
	Name string `json:"name"`
	// Holder runs the duty now, until Until (its clock); empty when idle.
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until,omitzero"`
	// Next is when the duty is next due.
	Next time.Time `json:"next"`
	// Runs counts the passes recorded.
	Runs int64 `json:"runs"`
	// The last recorded pass: who ran it, when it started and ended, what
	// it did, and its error if it failed.
	LastBy    string     `json:"last_by,omitempty"`
	LastStart time.Time  `json:"last_start,omitzero"`
	LastEnd   time.Time  `json:"last_end,omitzero"`
	Last      DutyReport `json:"last"`
	LastError string     `json:"last_error,omitempty"`
}

func dutySpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("duty") }

func dutyKey(q *quick.Queue, name string) []byte {
	return dutySpace(q).Pack(tuple.Tuple{name})
}

// decodeDuty decodes a record; a corrupt one reads as a free duty due now,
// so it is rewritten by the next pass rather than blocking it.
func decodeDuty(name string, b []byte) (DutyState, error) {
	st := DutyState{Name: name}
	if b == nil {
		return st, nil
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return DutyState{Name: name}, fmt.Errorf("%w: duty record %q: %w", ErrCorruptDuty, name, err)
	}
	st.Name = name
	return st, nil
}

// DutyStates reads the duty records of a queue (at most 1,000), for
// inspection.
func DutyStates(ctx context.Context, q *quick.Queue) ([]DutyState, error) {
	var out []DutyState
	sp := dutySpace(q)
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		b, e := sp.Range()
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: maxDutyRecords}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := sp.Unpack(p.Key)
			if err != nil || len(t) != 1 {
				continue
			}
			name, ok := t[0].(string)
			if !ok {
				continue
			}
			st, err := decodeDuty(name, p.Value)
			if err != nil {
				st.LastError = err.Error()
			}
			out = append(out, st)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("worker: read duty records: %w", err)
	}
	return out, nil
}

// take makes this worker the holder of duty d if it is due and free. It
// reads the record serializably and writes it: two workers taking it at
// once conflict, and one retries and finds it held. It returns whether it
// took the duty, and when to look again otherwise.
//
// Keys: S(1,"duty",name), read and written.
func (w *Worker) takeDuty(ctx context.Context, d Duty) (took bool, next time.Time, err error) {
	key := dutyKey(w.q, d.Name)
	err = w.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		took, next = false, time.Time{}
		now := w.clk.Now()
		var rd kv.ReadTransaction = tr
		if mutant.On("worker.duty-snapshot") {
			rd = tr.Snapshot()
		}
		v, err := rd.Get(key).Get()
		if err != nil {
			return err
		}
		st, derr := decodeDuty(d.Name, v)
		if derr != nil {
			w.log.Warn("worker: rewriting a corrupt duty record", "duty", d.Name, "err", derr)
		}
		switch {
		case now.Before(st.Next):
			next = st.Next
			return nil
		case st.Holder != "" && st.Holder != w.cfg.ID && now.Before(st.Until):
			next = st.Until
			return nil
		}
		st.Holder, st.Until = w.cfg.ID, now.Add(DutyLease)
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		tr.Set(key, b)
		took = true
		return nil
	})
	return took, next, err
}

// finishDuty records a pass and when the duty is next due, if this worker
// still holds it (a pass that outlived DutyLease may have lost it).
//
// Keys: S(1,"duty",name), read and written.
func (w *Worker) finishDuty(ctx context.Context, d Duty, start time.Time, rep DutyReport, runErr error) (time.Time, error) {
	key := dutyKey(w.q, d.Name)
	var next time.Time
	err := w.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		now := w.clk.Now()
		v, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		st, _ := decodeDuty(d.Name, v)
		if st.Holder != w.cfg.ID {
			next = now.Add(d.Every)
			return errDutyLost
		}
		st.Holder, st.Until, st.Next = "", time.Time{}, now.Add(d.Every)
		st.Runs++
		st.LastBy, st.LastStart, st.LastEnd, st.Last, st.LastError = w.cfg.ID, start, now, rep, ""
		if runErr != nil {
			st.LastError = runErr.Error()
			// A failed pass is tried again sooner than a full period.
			st.Next = now.Add(min(d.Every, DutyLease))
		}
		next = st.Next
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		tr.Set(key, b)
		return nil
	})
	return next, err
}

var errDutyLost = errors.New("worker: duty taken over by another worker while it ran")
