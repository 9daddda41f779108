package kv

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Faults configures the commit faults FaultyDB injects. Each probability is
// drawn per commit attempt that carries writes; read-only commits are never
// faulted, as FDB sends them nowhere. The probabilities add up: one draw
// picks at most one fault.
//
// A transaction with SetAutomaticIdempotency sees the two 1021 faults as
// FDB 7.3's client resolves them (see resolveUnknown): the applied one as a
// successful commit, the dropped one as 1007. The timeouts and
// cancellations striking a commit in flight stay unknown with it, as in FDB.
type Faults struct {
	// Seed makes the sequence of faults reproducible.
	Seed uint64
	// UnknownCommitted is the probability that a commit applies and then
	// reports 1021 commit_unknown_result: the case a blind retry duplicates.
	UnknownCommitted float64
	// UnknownNotCommitted is the probability that a commit is dropped and
	// reports 1021.
	UnknownNotCommitted float64
	// Conflict is the probability that a commit is dropped and reports 1020
	// not_committed, a spurious conflict (FDB reports false conflicts on
	// clusters with several resolvers).
	Conflict float64
	// TimedOutCommitted is the probability that the operation's own timeout
	// strikes while the commit is in flight, after it applied: 1031
	// transaction_timed_out with DuringCommit. The transaction is then dead,
	// as FDB's is: OnError answers with a bare 1031 (no DuringCommit), the
	// worst an engine may do, so callers must not rely on it.
	TimedOutCommitted float64
	// TimedOutNotCommitted is the same timeout striking before the commit
	// applied.
	TimedOutNotCommitted float64
	// CancelledCommitted is the probability that a cancellation (a context
	// that ends) strikes a commit in flight after it applied: 1025
	// transaction_cancelled with DuringCommit; OnError answers a bare 1025.
	CancelledCommitted float64
	// CancelledNotCommitted is the same cancellation striking before the
	// commit applied.
	CancelledNotCommitted float64
	// SlowCommit is the probability that a commit takes SlowCommitDelay
	// before it applies (and then succeeds): Advance is called with the
	// delay first, so a fake clock shows the time a commit near FDB's 5 s
	// limit takes, with no real sleep. Needs Advance.
	SlowCommit float64
	// SlowCommitDelay is how long a slow commit takes; default 4.5 s, just
	// under FDB's 5-second transaction limit.
	SlowCommitDelay time.Duration
	// Advance moves the clocks the code under test reads (the queue's fake
	// clock, say) by a slow commit's delay.
	Advance func(time.Duration)
}

// FaultStats counts the faults injected so far.
type FaultStats struct {
	UnknownCommitted      int64 `json:"unknown_committed"`
	UnknownNotCommitted   int64 `json:"unknown_not_committed"`
	Conflicts             int64 `json:"conflicts"`
	TimedOutCommitted     int64 `json:"timed_out_committed"`
	TimedOutNotCommitted  int64 `json:"timed_out_not_committed"`
	CancelledCommitted    int64 `json:"cancelled_committed"`
	CancelledNotCommitted int64 `json:"cancelled_not_committed"`
	SlowCommits           int64 `json:"slow_commits"`
}

// Total is the number of faults of every kind.
func (s FaultStats) Total() int64 {
	return s.UnknownCommitted + s.UnknownNotCommitted + s.Conflicts + s.TimedOutCommitted +
		s.TimedOutNotCommitted + s.CancelledCommitted + s.CancelledNotCommitted + s.SlowCommits
}

// Missing names the fault kinds cfg asks for (probability above zero) that
// were never injected, so a test can assert that its faults are switched on.
func (s FaultStats) Missing(cfg Faults) []string {
	var out []string
	for _, k := range []struct {
		name string
		p    float64
		n    int64
	}{
		{"unknown_committed", cfg.UnknownCommitted, s.UnknownCommitted},
		{"unknown_not_committed", cfg.UnknownNotCommitted, s.UnknownNotCommitted},
		{"conflicts", cfg.Conflict, s.Conflicts},
		{"timed_out_committed", cfg.TimedOutCommitted, s.TimedOutCommitted},
		{"timed_out_not_committed", cfg.TimedOutNotCommitted, s.TimedOutNotCommitted},
		{"cancelled_committed", cfg.CancelledCommitted, s.CancelledCommitted},
		{"cancelled_not_committed", cfg.CancelledNotCommitted, s.CancelledNotCommitted},
		{"slow_commits", cfg.SlowCommit, s.SlowCommits},
	} {
		if k.p > 0 && k.n == 0 {
			out = append(out, k.name)
		}
	}
	return out
}

// FaultyDB injects commit faults over any Database, so the same faults can be
// injected over memkv and over a real cluster. Latency is an engine option
// (memkv), since it has to act inside futures.
type FaultyDB struct {
	inner   Database
	cfg     Faults
	mu      sync.Mutex
	rng     *rand.Rand
	enabled atomic.Bool

	unknownCommitted, unknownNotCommitted, conflicts atomic.Int64
	timedOut, timedOutNot, cancelled, cancelledNot   atomic.Int64
	slow                                             atomic.Int64
}

// WithFaults wraps db so that its commits fail as cfg says.
func WithFaults(db Database, cfg Faults) *FaultyDB {
	if cfg.SlowCommitDelay <= 0 {
		cfg.SlowCommitDelay = 4500 * time.Millisecond
	}
	f := &FaultyDB{inner: db, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	f.enabled.Store(true)
	return f
}

// SetEnabled turns injection on or off, e.g. to let a checker read the final
// state without faults.
func (f *FaultyDB) SetEnabled(on bool) { f.enabled.Store(on) }

// Stats returns the faults injected so far.
func (f *FaultyDB) Stats() FaultStats {
	return FaultStats{
		UnknownCommitted:    f.unknownCommitted.Load(),
		UnknownNotCommitted: f.unknownNotCommitted.Load(),
		Conflicts:           f.conflicts.Load(),

		TimedOutCommitted:     f.timedOut.Load(),
		TimedOutNotCommitted:  f.timedOutNot.Load(),
		CancelledCommitted:    f.cancelled.Load(),
		CancelledNotCommitted: f.cancelledNot.Load(),
		SlowCommits:           f.slow.Load(),
	}
}

// Unwrap returns the wrapped database.
func (f *FaultyDB) Unwrap() Database { return f.inner }

// CreateTransaction implements Database.
func (f *FaultyDB) CreateTransaction() (Transaction, error) {
	tr, err := f.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &faultyTx{Transaction: tr, db: f}, nil
}

// Transact implements Database.
func (f *FaultyDB) Transact(ctx context.Context, fn func(Transaction) error) error {
	tr, err := f.CreateTransaction()
	if err != nil {
		return err
	}
	return Retry(ctx, tr, fn)
}

// ReadTransact implements Database.
func (f *FaultyDB) ReadTransact(ctx context.Context, fn func(ReadTransaction) error) error {
	tr, err := f.CreateTransaction()
	if err != nil {
		return err
	}
	return RetryRead(ctx, tr, fn)
}

type fault int

const (
	noFault fault = iota
	faultUnknownCommitted
	faultUnknownNotCommitted
	faultConflict
	faultTimedOut
	faultTimedOutNot
	faultCancelled
	faultCancelledNot
	faultSlow
)

func (f *FaultyDB) draw() fault {
	if !f.enabled.Load() {
		return noFault
	}
	f.mu.Lock()
	r := f.rng.Float64()
	f.mu.Unlock()
	for _, k := range []struct {
		p float64
		f fault
	}{
		{f.cfg.UnknownCommitted, faultUnknownCommitted},
		{f.cfg.UnknownNotCommitted, faultUnknownNotCommitted},
		{f.cfg.Conflict, faultConflict},
		{f.cfg.TimedOutCommitted, faultTimedOut},
		{f.cfg.TimedOutNotCommitted, faultTimedOutNot},
		{f.cfg.CancelledCommitted, faultCancelled},
		{f.cfg.CancelledNotCommitted, faultCancelledNot},
		{f.cfg.SlowCommit, faultSlow},
	} {
		if r < k.p {
			if k.f == faultSlow && f.cfg.Advance == nil {
				return noFault
			}
			return k.f
		}
		r -= k.p
	}
	return noFault
}

// faultyTx tracks whether the attempt writes, so read-only commits pass
// untouched.
type faultyTx struct {
	Transaction
	db     *FaultyDB
	writes bool
	// dead is the code of an injected timeout or cancellation: the
	// transaction is over until Reset, as FDB's is.
	dead int
	// idempotent is set by SetAutomaticIdempotency and, like the option in
	// the kv contract, survives OnError and Reset.
	idempotent bool
	// resolved is set when this attempt's commit came back unknown, was
	// resolved as committed, and so has no committed version to report.
	resolved bool
}

// Options returns the options of the wrapped transaction, watching for
// SetAutomaticIdempotency.
func (t *faultyTx) Options() TransactionOptions {
	return faultyOptions{TransactionOptions: t.Transaction.Options(), t: t}
}

type faultyOptions struct {
	TransactionOptions
	t *faultyTx
}

func (o faultyOptions) SetAutomaticIdempotency() error {
	if err := o.TransactionOptions.SetAutomaticIdempotency(); err != nil {
		return err
	}
	o.t.idempotent = true
	return nil
}

func (t *faultyTx) Set(key, value []byte) { t.writes = true; t.Transaction.Set(key, value) }
func (t *faultyTx) Clear(key []byte)      { t.writes = true; t.Transaction.Clear(key) }
func (t *faultyTx) ClearRange(r KeyRange) { t.writes = true; t.Transaction.ClearRange(r) }
func (t *faultyTx) Atomic(op MutationType, key, param []byte) {
	t.writes = true
	t.Transaction.Atomic(op, key, param)
}
func (t *faultyTx) Add(key, param []byte) { t.writes = true; t.Transaction.Add(key, param) }
func (t *faultyTx) Max(key, param []byte) { t.writes = true; t.Transaction.Max(key, param) }
func (t *faultyTx) Min(key, param []byte) { t.writes = true; t.Transaction.Min(key, param) }
func (t *faultyTx) CompareAndClear(key, param []byte) {
	t.writes = true
	t.Transaction.CompareAndClear(key, param)
}
func (t *faultyTx) SetVersionstampedKey(key, value []byte) {
	t.writes = true
	t.Transaction.SetVersionstampedKey(key, value)
}
func (t *faultyTx) SetVersionstampedValue(key, value []byte) {
	t.writes = true
	t.Transaction.SetVersionstampedValue(key, value)
}
func (t *faultyTx) AddWriteConflictKey(key []byte) error {
	t.writes = true
	return t.Transaction.AddWriteConflictKey(key)
}
func (t *faultyTx) AddWriteConflictRange(r KeyRange) error {
	t.writes = true
	return t.Transaction.AddWriteConflictRange(r)
}

func (t *faultyTx) Commit() error {
	if !t.writes {
		return t.Transaction.Commit()
	}
	f := t.db.draw()
	switch f {
	case faultUnknownCommitted:
		if err := t.Transaction.Commit(); err != nil {
			return err
		}
		t.db.unknownCommitted.Add(1)
		return t.resolveUnknown(true)
	case faultUnknownNotCommitted:
		t.db.unknownNotCommitted.Add(1)
		return t.resolveUnknown(false)
	case faultConflict:
		t.db.conflicts.Add(1)
		return ErrNotCommitted
	case faultTimedOut, faultCancelled:
		if err := t.Transaction.Commit(); err != nil {
			return err
		}
		return t.strike(f)
	case faultTimedOutNot, faultCancelledNot:
		return t.strike(f)
	case faultSlow:
		t.db.cfg.Advance(t.db.cfg.SlowCommitDelay)
		t.db.slow.Add(1)
	}
	return t.Transaction.Commit()
}

// resolveUnknown is what Commit returns for a commit whose reply was lost
// (1021), applied or not. Without automatic idempotency that is 1021. With
// it, FDB 7.3's client (fdbclient/NativeAPI.actor.cpp, release-7.3 at
// e906cb0e) does not report the loss: tryCommit catches 1021 and
// request_maybe_delivered (:6937), commits a dummy transaction on the
// attempt's own conflict key \xff/SC/<id> so that the lost commit can no
// longer land (:6955; the key is added at :7052), then determineCommitStatus
// (:6552) reads the IDs the commit proxies stored under \xff\x02/idmp/ for
// the versions the commit could have taken. Found: Commit succeeds (:6963,
// setting only the versionstamp, so GetCommittedVersion stays -1; strictly,
// it keeps whatever an earlier commit of the same transaction left, since
// TransactionState::cloneAndReset copies it, :3736). Not
// found: it throws transaction_too_old, 1007, retryable and not committed
// (:6972), not 1020. Nothing else is resolved: 1039 comes from the
// multi-version client above this code, and a 1031 or 1025 fails the RYW
// commit's race with its reset promise (ReadYourWrites.actor.cpp:1405)
// before the lookup ends; fdb.options:311 warns of both.
func (t *faultyTx) resolveUnknown(applied bool) error {
	switch {
	case !t.idempotent:
		return ErrCommitUnknownResult
	case applied:
		t.resolved = true
		return nil
	default:
		return ErrTransactionTooOld
	}
}

// GetCommittedVersion reports -1 after a commit resolved as committed, as
// FDB does.
func (t *faultyTx) GetCommittedVersion() (int64, error) {
	if t.resolved {
		return -1, nil
	}
	return t.Transaction.GetCommittedVersion()
}

// strike ends the transaction with a timeout or cancellation that struck
// its commit in flight.
func (t *faultyTx) strike(f fault) error {
	code := 1031
	switch f {
	case faultTimedOut:
		t.db.timedOut.Add(1)
	case faultTimedOutNot:
		t.db.timedOutNot.Add(1)
	case faultCancelled:
		t.db.cancelled.Add(1)
		code = 1025
	case faultCancelledNot:
		t.db.cancelledNot.Add(1)
		code = 1025
	}
	t.dead = code
	return Error{Code: code, DuringCommit: true}
}

func (t *faultyTx) OnError(err error) error {
	if t.dead != 0 {
		return Error{Code: t.dead}
	}
	if rerr := t.Transaction.OnError(err); rerr != nil {
		return rerr
	}
	t.writes, t.resolved = false, false
	return nil
}

func (t *faultyTx) Reset() {
	t.Transaction.Reset()
	t.writes, t.dead, t.resolved = false, 0, false
}
