package memkv

import (
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// gen is one attempt of a transaction: the span between resets. It plays the
// part of FDB's resetPromise. Failing it (cancel, timeout, use during commit,
// reset) fails every operation of the attempt still pending and every later
// one, until OnError or Reset starts a new attempt.
type gen struct {
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func newGen() *gen { return &gen{done: make(chan struct{})} }

// fail records err unless the attempt already failed.
func (g *gen) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
		close(g.done)
	}
}

// failure is the attempt's error, or nil while it is alive.
func (g *gen) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// waitUntil blocks until time at on the wait clock c (no wait for a zero
// at) or until g fails, whichever is first, and returns g's error in the
// second case.
func waitUntil(c clock.Clock, g *gen, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	d := at.Sub(c.Now())
	if d <= 0 {
		return nil
	}
	select {
	case <-c.After(d):
		return nil
	case <-g.done:
		return g.failure()
	}
}

// readyFuture is a future whose outcome was known when it was made.
type readyFuture[T any] struct {
	val T
	err error
}

func (f readyFuture[T]) Get() (T, error) { return f.val, f.err }

func failed[T any](err error) readyFuture[T] { return readyFuture[T]{err: err} }

// timedFuture is a read in flight. The engine computes a read's result when
// the read is issued (against the read version's immutable snapshot, so the
// result cannot change) and injected latency only delays its delivery: the
// delay starts at issue, so reads issued together overlap as FDB's do. If the
// attempt fails before delivery, Get returns the failure, as FDB's futures
// fail when the transaction is cancelled, times out or is reset.
type timedFuture[T any] struct {
	t   *txn
	g   *gen
	at  time.Time // zero: ready at once
	val T
	err error
}

func (f *timedFuture[T]) Get() (T, error) {
	var zero T
	if f.at.IsZero() || !f.t.db.opts.Wait.Now().Before(f.at) {
		return f.val, f.err
	}
	if err := waitUntil(f.t.db.opts.Wait, f.g, f.at); err != nil {
		return zero, err
	}
	// A timeout on a manual engine clock cannot wake the wait; look now.
	if err := f.t.expire(f.g); err != nil {
		return zero, err
	}
	return f.val, f.err
}

// promise is a value settled once, later: the versionstamp of a commit.
type promise[T any] struct {
	done chan struct{}
	once sync.Once
	val  T
	err  error
}

func newPromise[T any]() *promise[T] { return &promise[T]{done: make(chan struct{})} }

func (p *promise[T]) resolve(v T) {
	p.once.Do(func() {
		p.val = v
		close(p.done)
	})
}

func (p *promise[T]) reject(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.done)
	})
}

// promiseFuture waits for a promise, unless its attempt fails first. A
// settled promise wins over a later failure, as FDB's waitOrError does.
type promiseFuture[T any] struct {
	p *promise[T]
	g *gen
}

func (f promiseFuture[T]) Get() (T, error) {
	select {
	case <-f.p.done:
		return f.p.val, f.p.err
	default:
	}
	select {
	case <-f.p.done:
		return f.p.val, f.p.err
	case <-f.g.done:
		select {
		case <-f.p.done:
			return f.p.val, f.p.err
		default:
		}
		var zero T
		return zero, f.g.failure()
	}
}
