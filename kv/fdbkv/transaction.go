//go:build fdb

package fdbkv

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/quickfdb/quickfdb/kv"
)

// transaction implements kv.Transaction over an fdb.Transaction.
type transaction struct {
	readView
	tr fdb.Transaction

	// cancelled is set by Cancel until the next Reset or successful
	// OnError: a commit started after it never reached the cluster.
	cancelled atomic.Bool

	mu sync.Mutex
	// started is when this adapter last saw the transaction begin (wrapping
	// or Reset). FDB's timeout clock started no later, so a timeout measured
	// from here expires no earlier than FDB's.
	started time.Time
	// timeout is the last timeout set through Options (0: none known).
	timeout time.Duration
	// replay re-applies the options set through Options after Reset, which
	// clears them in FDB but keeps them in the kv contract.
	replay []func(fdb.TransactionOptions) error
	// deferred is an error recorded by an operation that cannot return one
	// (Atomic with an unknown MutationType); Commit returns it, as FDB
	// surfaces a void operation's error.
	deferred error
}

func newTransaction(tr fdb.Transaction) *transaction {
	return &transaction{readView: readView{rt: tr}, tr: tr, started: time.Now()}
}

func key(k []byte) fdb.Key { return fdb.Key(k) }

func keyRange(r kv.KeyRange) fdb.KeyRange {
	return fdb.KeyRange{Begin: fdb.Key(r.Begin), End: fdb.Key(r.End)}
}

func (t *transaction) Set(k, value []byte)      { t.tr.Set(key(k), value) }
func (t *transaction) Clear(k []byte)           { t.tr.Clear(key(k)) }
func (t *transaction) ClearRange(r kv.KeyRange) { t.tr.ClearRange(keyRange(r)) }

func (t *transaction) Atomic(op kv.MutationType, k, param []byte) {
	fk := key(k)
	switch op {
	case kv.MutationAdd:
		t.tr.Add(fk, param)
	case kv.MutationBitAnd:
		t.tr.BitAnd(fk, param)
	case kv.MutationBitOr:
		t.tr.BitOr(fk, param)
	case kv.MutationBitXor:
		t.tr.BitXor(fk, param)
	case kv.MutationAppendIfFits:
		t.tr.AppendIfFits(fk, param)
	case kv.MutationMax:
		t.tr.Max(fk, param)
	case kv.MutationMin:
		t.tr.Min(fk, param)
	case kv.MutationSetVersionstampedKey:
		t.tr.SetVersionstampedKey(fk, param)
	case kv.MutationSetVersionstampedValue:
		t.tr.SetVersionstampedValue(fk, param)
	case kv.MutationByteMin:
		t.tr.ByteMin(fk, param)
	case kv.MutationByteMax:
		t.tr.ByteMax(fk, param)
	case kv.MutationCompareAndClear:
		t.tr.CompareAndClear(fk, param)
	default:
		// The binding has no way to send an arbitrary code; FDB itself
		// rejects it with 2018 invalid_mutation_type, surfaced at commit.
		t.mu.Lock()
		if t.deferred == nil {
			t.deferred = codeError{kv.ErrInvalidMutationType}
		}
		t.mu.Unlock()
	}
}

func (t *transaction) Add(k, param []byte)             { t.tr.Add(key(k), param) }
func (t *transaction) Max(k, param []byte)             { t.tr.Max(key(k), param) }
func (t *transaction) Min(k, param []byte)             { t.tr.Min(key(k), param) }
func (t *transaction) CompareAndClear(k, param []byte) { t.tr.CompareAndClear(key(k), param) }

func (t *transaction) SetVersionstampedKey(k, value []byte) {
	t.tr.SetVersionstampedKey(key(k), value)
}

func (t *transaction) SetVersionstampedValue(k, value []byte) {
	t.tr.SetVersionstampedValue(key(k), value)
}

func (t *transaction) GetVersionstamp() kv.Future[[]byte] {
	return keyFuture{f: t.tr.GetVersionstamp()}
}

func (t *transaction) AddReadConflictKey(k []byte) error {
	return convertErr(t.tr.AddReadConflictKey(key(k)))
}

func (t *transaction) AddReadConflictRange(r kv.KeyRange) error {
	return convertErr(t.tr.AddReadConflictRange(keyRange(r)))
}

func (t *transaction) AddWriteConflictKey(k []byte) error {
	return convertErr(t.tr.AddWriteConflictKey(key(k)))
}

func (t *transaction) AddWriteConflictRange(r kv.KeyRange) error {
	return convertErr(t.tr.AddWriteConflictRange(keyRange(r)))
}

func (t *transaction) Watch(k []byte) kv.Watch {
	return newWatch(t.tr.Watch(key(k)))
}

func (t *transaction) GetApproximateSize() kv.Future[int64] {
	return int64Future{f: t.tr.GetApproximateSize()}
}

func (t *transaction) Options() kv.TransactionOptions { return options{t: t} }

// Commit commits, returning a kv.Error for an FDB error. 1025 and 1031 get
// DuringCommit unless the adapter knows the cancellation or the timeout came
// before the commit was sent.
func (t *transaction) Commit() error {
	t.mu.Lock()
	deferred := t.deferred
	expiredBefore := t.timeout > 0 && time.Since(t.started) >= t.timeout
	t.mu.Unlock()
	if deferred != nil {
		return deferred
	}
	cancelledBefore := t.cancelled.Load()
	err := convertErr(t.tr.Commit().Get())
	if err == nil {
		return nil
	}
	if e, ok := err.(codeError); ok {
		switch {
		case e.kerr.Code == kv.ErrTransactionCancelled.Code && !cancelledBefore,
			e.kerr.Code == kv.ErrTransactionTimedOut.Code && !expiredBefore:
			e.kerr.DuringCommit = true
		}
		return e
	}
	return err
}

func (t *transaction) GetCommittedVersion() (int64, error) {
	v, err := t.tr.GetCommittedVersion()
	return v, convertErr(err)
}

// OnError hands a kv.Error's code to FDB's on_error. When FDB answers with
// the same code (not retryable), err itself is returned, so that its
// DuringCommit flag and any wrapping survive, as the binding's retry loop
// returns the original error.
func (t *transaction) OnError(err error) error {
	var ke kv.Error
	if !errors.As(err, &ke) {
		return err
	}
	rerr := t.tr.OnError(fdb.Error{Code: ke.Code}).Get()
	if rerr == nil {
		// FDB reset the attempt, which also lifts a cancellation. Forgetting
		// one that raced with the reset only errs towards DuringCommit.
		t.cancelled.Store(false)
		t.mu.Lock()
		t.deferred = nil
		t.mu.Unlock()
		// FDB's reset kept only the options marked persistent in
		// fdb.options (timeout, retry_limit, max_retry_delay: RYW
		// applyPersistentOptions); it dropped tags, batch priority and
		// automatic_idempotency (NativeAPI Transaction::resetImpl starts a
		// new TransactionState and CommitTransactionRequest). The kv
		// contract keeps them all.
		t.replayOptions()
		return nil
	}
	var fe fdb.Error
	if errors.As(rerr, &fe) && fe.Code == ke.Code {
		return err
	}
	return convertErr(rerr)
}

// Reset resets the transaction and re-applies the options set through
// Options: FDB's reset clears them, the kv contract keeps them.
func (t *transaction) Reset() {
	t.tr.Reset()
	t.cancelled.Store(false)
	t.mu.Lock()
	t.started = time.Now()
	t.deferred = nil
	t.mu.Unlock()
	t.replayOptions()
}

// replayOptions sets again the options set through Options, in the order
// they were set. Setting the timeout again is what FDB's own
// applyPersistentOptions does: it runs from the transaction's creation or
// Reset, not from the call.
func (t *transaction) replayOptions() {
	t.mu.Lock()
	replay := t.replay
	t.mu.Unlock()
	o := t.tr.Options()
	for _, set := range replay {
		_ = set(o) // each was accepted when first set
	}
}

func (t *transaction) Cancel() {
	t.cancelled.Store(true)
	t.tr.Cancel()
}

// options implements kv.TransactionOptions.
type options struct{ t *transaction }

func (o options) set(f func(fdb.TransactionOptions) error) error {
	if err := convertErr(f(o.t.tr.Options())); err != nil {
		return err
	}
	o.t.mu.Lock()
	o.t.replay = append(o.t.replay, f)
	o.t.mu.Unlock()
	return nil
}

func (o options) SetTimeout(milliseconds int64) error {
	err := o.set(func(to fdb.TransactionOptions) error { return to.SetTimeout(milliseconds) })
	if err == nil {
		o.t.mu.Lock()
		o.t.timeout = time.Duration(milliseconds) * time.Millisecond
		o.t.mu.Unlock()
	}
	return err
}

func (o options) SetRetryLimit(limit int64) error {
	return o.set(func(to fdb.TransactionOptions) error { return to.SetRetryLimit(limit) })
}

func (o options) SetPriorityBatch() error {
	return o.set(func(to fdb.TransactionOptions) error { return to.SetPriorityBatch() })
}

func (o options) SetTag(tag string) error {
	return o.set(func(to fdb.TransactionOptions) error { return to.SetTag(tag) })
}

func (o options) SetAutoThrottleTag(tag string) error {
	return o.set(func(to fdb.TransactionOptions) error { return to.SetAutoThrottleTag(tag) })
}

// SetAutomaticIdempotency sets FDB 7.3's automatic_idempotency (505). FDB's
// reset leaves the attempt without an ID, so the replay after Reset and
// OnError draws a new one for each attempt (NativeAPI.actor.cpp:7402), as
// the option does in FDB's own retry loop with the database-wide default.
// The binding has no setter for idempotency_id (504): the option is hidden
// in fdb.options, and the Go generator skips hidden options.
func (o options) SetAutomaticIdempotency() error {
	return o.set(func(to fdb.TransactionOptions) error { return to.SetAutomaticIdempotency() })
}

// readView implements kv.ReadTransaction over an fdb.ReadTransaction: a
// transaction's serializable view or its snapshot.
type readView struct {
	rt fdb.ReadTransaction
}

func (r readView) Get(k []byte) kv.Future[[]byte] {
	return byteFuture{f: r.rt.Get(key(k))}
}

func (r readView) GetRange(kr kv.KeyRange, opts kv.RangeOptions) kv.RangeResult {
	return rangeResult{rr: r.rt.GetRange(keyRange(kr), rangeOptions(opts))}
}

func (r readView) GetReadVersion() kv.Future[int64] {
	return int64Future{f: r.rt.GetReadVersion()}
}

func (r readView) Snapshot() kv.ReadTransaction {
	return readView{rt: r.rt.Snapshot()}
}

// rangeOptions picks the streaming mode for the first batch, which is issued
// at once: Exact for a limited read (its rows in one round trip, as the
// binding's GetSliceWithError asks), Iterator otherwise (small first batch,
// growing; GetSliceWithError switches to WantAll for the rest).
func rangeOptions(o kv.RangeOptions) fdb.RangeOptions {
	mode := fdb.StreamingModeIterator
	if o.Limit > 0 {
		mode = fdb.StreamingModeExact
	}
	return fdb.RangeOptions{Limit: o.Limit, Mode: mode, Reverse: o.Reverse}
}

type byteFuture struct{ f fdb.FutureByteSlice }

func (f byteFuture) Get() ([]byte, error) {
	v, err := f.f.Get()
	if err != nil {
		return nil, convertErr(err)
	}
	return v, nil
}

type keyFuture struct{ f fdb.FutureKey }

func (f keyFuture) Get() ([]byte, error) {
	k, err := f.f.Get()
	if err != nil {
		return nil, convertErr(err)
	}
	return []byte(k), nil
}

type int64Future struct{ f fdb.FutureInt64 }

func (f int64Future) Get() (int64, error) {
	v, err := f.f.Get()
	return v, convertErr(err)
}

type rangeResult struct{ rr fdb.RangeResult }

func (r rangeResult) GetSliceWithError() ([]kv.KeyValue, error) {
	kvs, err := r.rr.GetSliceWithError()
	if err != nil {
		return nil, convertErr(err)
	}
	out := make([]kv.KeyValue, len(kvs))
	for i, p := range kvs {
		out[i] = kv.KeyValue{Key: []byte(p.Key), Value: p.Value}
	}
	return out, nil
}

func (r rangeResult) Iterator() kv.RangeIterator {
	return &rangeIterator{it: r.rr.Iterator()}
}

type rangeIterator struct{ it *fdb.RangeIterator }

func (r *rangeIterator) Advance() bool { return r.it.Advance() }

func (r *rangeIterator) Get() (kv.KeyValue, error) {
	p, err := r.it.Get()
	if err != nil {
		return kv.KeyValue{}, convertErr(err)
	}
	return kv.KeyValue{Key: []byte(p.Key), Value: p.Value}, nil
}

// watch implements kv.Watch over the binding's FutureNil. One goroutine per
// watch blocks on the future; it ends when the watch fires, fails or is
// cancelled.
type watch struct {
	f    fdb.FutureNil
	once sync.Once
	done chan struct{}
	err  error
}

func newWatch(f fdb.FutureNil) *watch {
	return &watch{f: f, done: make(chan struct{})}
}

func (w *watch) start() {
	w.once.Do(func() {
		go func() {
			w.err = convertErr(w.f.Get())
			close(w.done)
		}()
	})
}

// Wait waits for the watch. When ctx is done first it returns ctx.Err() and
// leaves the watch armed, so Wait may be called again; Cancel releases it.
func (w *watch) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.start()
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel cancels the watch: a pending or later Wait returns 1101
// operation_cancelled (FDB's error for a cancelled future).
func (w *watch) Cancel() {
	w.f.Cancel()
}
