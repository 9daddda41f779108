package memkv

import (
	"errors"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// txn is a transaction: FDB's ReadYourWritesTransaction over a native
// transaction, in one type. Its methods lock mu, so reads may be issued and
// awaited from several goroutines; nothing blocks while holding mu.
type txn struct {
	db *DB
	mu sync.Mutex

	// Options. They survive OnError as in FDB, and Reset as the kv contract
	// says (FDB's Reset would clear them).
	timeout    time.Duration
	retryLimit int64
	batch      bool
	tags       []string
	idempotent bool // SetAutomaticIdempotency: see txnoptions.go

	// Lifetime, restarted by Reset only: the timeout runs from created, so it
	// bounds a whole retry loop.
	created  time.Time // engine clock
	deadline time.Time // engine clock; zero without a timeout
	timer    *time.Timer
	retries  int64
	backoff  time.Duration

	// The attempt: cleared by OnError's reset and by Reset.
	g             *gen
	rv            readView
	hasRV         bool
	rvAt          time.Time // wait-clock time the read version arrives (latency)
	w             writeMap
	reads         []kv.KeyRange // read-conflict ranges, uncoalesced
	size          int64         // GetApproximateSize's figure
	deferred      error         // an error raised where the API returns none
	commitStarted bool
	committed     int64
	stamp         *promise[[]byte]
	watches       []*watch // created, not yet armed or fired
}

var _ kv.Transaction = (*txn)(nil)

func newTxn(db *DB) *txn {
	t := &txn{db: db, retryLimit: -1}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created = db.clock.Now()
	t.backoff = db.opts.Backoff.Initial
	t.g = newGen()
	t.resetAttemptLocked()
	return t
}

// resetAttemptLocked starts a new attempt (FDB's resetRyow): the old one's
// pending operations and unarmed watches fail with 1025.
func (t *txn) resetAttemptLocked() {
	old := t.g
	t.g = newGen()
	old.fail(errCancelled)
	for _, w := range t.watches {
		w.finish(errCancelled)
	}
	t.watches = nil
	t.rv, t.hasRV, t.rvAt = readView{}, false, time.Time{}
	t.w = writeMap{}
	t.reads = nil
	t.size = 0
	t.deferred = nil
	t.commitStarted = false
	t.committed = -1
	t.stamp = newPromise[[]byte]()
}

// Reset returns the transaction to its initial state. Options are kept, as
// the kv contract says; the timeout and retry count start over.
func (t *txn) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetAttemptLocked()
	t.retries = 0
	t.backoff = t.db.opts.Backoff.Initial
	t.created = t.db.clock.Now()
	t.armTimeoutLocked()
}

// Cancel fails pending and later operations with 1025 until Reset.
func (t *txn) Cancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.g.fail(errCancelled)
	for _, w := range t.watches {
		w.finish(errCancelled)
	}
	t.watches = nil
}

// release stops the timeout timer of a transaction its owner is done with.
func (t *txn) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// OnError follows ReadYourWritesTransaction::onError and
// Transaction::onError: a failed attempt returns its own error; past the
// retry limit, or for an error that is not retryable, err is returned and the
// transaction stays failed (1025) until Reset; otherwise it backs off,
// starts a new attempt and returns nil.
func (t *txn) OnError(err error) error {
	if err == nil {
		return errInvalidOperation
	}
	t.mu.Lock()
	t.checkDeadlineLocked()
	if gerr := t.g.failure(); gerr != nil {
		t.mu.Unlock()
		// The attempt failed with err itself (a timeout or cancel that
		// struck a commit in flight): hand err back, DuringCommit kept, as
		// the FDB adapter does for the same code.
		if kv.Code(gerr) == kv.Code(err) {
			return err
		}
		return gerr
	}
	limitHit := t.retryLimit != -1 && t.retries >= t.retryLimit
	t.retries++
	var fe kv.Error
	if limitHit || !errors.As(err, &fe) || !kv.IsRetryable(err) {
		t.g.fail(errCancelled)
		t.mu.Unlock()
		return err
	}
	wait := t.db.jitter(t.backoff)
	t.backoff = min(2*t.backoff, t.db.opts.Backoff.Max)
	g := t.g
	t.mu.Unlock()

	if werr := waitUntil(t.db.opts.Wait, g, t.db.opts.Wait.Now().Add(wait)); werr != nil {
		return werr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checkDeadlineLocked()
	if gerr := g.failure(); gerr != nil {
		return gerr
	}
	if t.g == g {
		t.resetAttemptLocked()
	}
	return nil
}

// armTimeoutLocked sets the deadline from the timeout option. A real timer
// fails the attempt when the deadline passes, waking blocked futures; with a
// manual engine clock the timer only prompts a look at the clock, and
// operations check the deadline themselves.
func (t *txn) armTimeoutLocked() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.timeout <= 0 {
		t.deadline = time.Time{}
		return
	}
	t.deadline = t.created.Add(t.timeout)
	wait := max(t.deadline.Sub(t.db.clock.Now()), 0)
	t.timer = time.AfterFunc(wait, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.checkDeadlineLocked()
	})
	t.checkDeadlineLocked()
}

// checkDeadlineLocked fails the attempt with 1031 once the deadline passed.
func (t *txn) checkDeadlineLocked() {
	if !t.deadline.IsZero() && !t.db.clock.Now().Before(t.deadline) {
		t.g.fail(errTimedOut)
	}
}

// expire applies the deadline to attempt g and returns g's error, if any.
func (t *txn) expire(g *gen) error {
	t.mu.Lock()
	if g == t.g {
		t.checkDeadlineLocked()
	}
	t.mu.Unlock()
	return g.failure()
}

// readCheckLocked gates a read the way FDB's layers do, in their order: a
// deferred error first (ThreadSafeTransaction), then use after commit
// started (which also fails the attempt), then the attempt's own failure.
func (t *txn) readCheckLocked() error {
	if t.deferred != nil {
		return t.deferred
	}
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		return errUsedDuringCommit
	}
	t.checkDeadlineLocked()
	return t.g.failure()
}

// takeReadVersionLocked takes the read version if none was taken and returns
// the real time it arrives, with injected GRV latency.
func (t *txn) takeReadVersionLocked() time.Time {
	if !t.hasRV {
		t.rv = t.db.store.readVersion(t.db.clockVersion())
		t.hasRV = true
		if d := t.db.delay(t.db.opts.Latency.GRV); d > 0 {
			t.rvAt = t.db.opts.Wait.Now().Add(d)
		}
	}
	return t.rvAt
}

// readAtLocked takes the read version if needed and returns when a storage
// read issued now completes.
func (t *txn) readAtLocked() time.Time {
	at := t.takeReadVersionLocked()
	d := t.db.delay(t.db.opts.Latency.Read)
	if d == 0 {
		return at
	}
	start := t.db.opts.Wait.Now()
	if at.After(start) {
		start = at
	}
	return start.Add(d)
}

// GetReadVersion returns the read version, taking it if needed.
func (t *txn) GetReadVersion() kv.Future[int64] {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Like RYW's getReadVersion, this works after commit started.
	if t.deferred != nil {
		return failed[int64](t.deferred)
	}
	t.checkDeadlineLocked()
	if err := t.g.failure(); err != nil {
		return failed[int64](err)
	}
	at := t.takeReadVersionLocked()
	return &timedFuture[int64]{t: t, g: t.g, at: at, val: t.rv.version}
}

// GetApproximateSize reports FDB's running estimate of the transaction's
// size: mutations and conflict ranges with FDB's per-entry overheads.
func (t *txn) GetApproximateSize() kv.Future[int64] {
	t.mu.Lock()
	defer t.mu.Unlock()
	return readyFuture[int64]{val: t.size}
}

// GetCommittedVersion returns the commit version after a successful commit,
// and -1 before one and for a read-only transaction.
func (t *txn) GetCommittedVersion() (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.committed, nil
}

// GetVersionstamp returns the commit's versionstamp, once committed. As in
// FDB, it must be called before Commit (after, it fails with 2017); it fails
// with 2021 for a read-only commit, with 2020 (transaction_invalid_version)
// when the commit fails, and with 1025 when the attempt is reset first.
func (t *txn) GetVersionstamp() kv.Future[[]byte] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.commitStarted {
		t.g.fail(errUsedDuringCommit)
		return failed[[]byte](errUsedDuringCommit)
	}
	return promiseFuture[[]byte]{p: t.stamp, g: t.g}
}

// Snapshot returns a view whose reads add no read-conflict ranges.
func (t *txn) Snapshot() kv.ReadTransaction { return snapshotView{t} }

// Options returns the transaction's option setter.
func (t *txn) Options() kv.TransactionOptions { return txnOptions{t} }
