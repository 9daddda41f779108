package memkv

import (
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
)

func fixed(d time.Duration) LatencyRange { return LatencyRange{Min: d, Max: d} }

var waitEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// openWaiting opens an engine whose latency and backoff run on a fake
// clock, so tests measure them exactly and take no real time.
func openWaiting(t *testing.T, opts Options) (*DB, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(waitEpoch)
	opts.Wait = fake
	db := Open(opts)
	t.Cleanup(func() { db.Close() })
	return db, fake
}

// advanceUntil moves fake forward by step whenever something sleeps on it,
// until done yields, and returns the value and the fake time it took.
func advanceUntil[T any](fake *clock.Fake, step time.Duration, done <-chan T) (T, time.Duration) {
	start := fake.Now()
	for {
		ch := fake.Changed()
		select {
		case v := <-done:
			return v, fake.Now().Sub(start)
		default:
		}
		if fake.Sleepers() > 0 {
			fake.Advance(step)
			continue
		}
		select {
		case v := <-done:
			return v, fake.Now().Sub(start)
		case <-ch:
		}
	}
}

// settle runs f while advancing fake whenever f sleeps on it.
func settle(fake *clock.Fake, f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	advanceUntil(fake, time.Millisecond, done)
}

// waitSleeping blocks until n sleepers wait on fake.
func waitSleeping(fake *clock.Fake, n int) {
	for {
		ch := fake.Changed()
		if fake.Sleepers() >= n {
			return
		}
		<-ch
	}
}

// Reads issued together overlap: eleven reads after a 20 ms read version,
// each 30 ms, all arrive at 50 ms; a later read pays its own latency only.
func TestFuturesOverlap(t *testing.T) {
	db, fake := openWaiting(t, Options{Latency: Latency{GRV: fixed(20 * time.Millisecond), Read: fixed(30 * time.Millisecond)}})
	settle(fake, func() { put(t, db, "k", "v") })
	tr := begin(t, db)
	var fs []kv.Future[[]byte]
	for i := range 10 {
		fs = append(fs, tr.Get([]byte(fmt.Sprint("k", i))))
	}
	rr := tr.GetRange(rng("a", "z"), kv.RangeOptions{})
	if fake.Sleepers() != 0 {
		t.Fatal("issuing reads waited")
	}
	done := make(chan error, 1)
	go func() {
		for _, f := range fs {
			if _, err := f.Get(); err != nil {
				done <- err
				return
			}
		}
		_, err := rr.GetSliceWithError()
		done <- err
	}()
	err, took := advanceUntil(fake, time.Millisecond, done)
	if err != nil {
		t.Fatal(err)
	}
	if took != 50*time.Millisecond {
		t.Fatalf("11 overlapping reads took %v, want GRV+read = 50ms", took)
	}
	// The read version is taken once.
	one := make(chan error, 1)
	go func() { _, err := tr.Get([]byte("k")).Get(); one <- err }()
	if err, took := advanceUntil(fake, time.Millisecond, one); err != nil || took != 30*time.Millisecond {
		t.Fatalf("second read took %v (%v), want the read latency alone, 30ms", took, err)
	}
}

func TestCommitLatency(t *testing.T) {
	db, fake := openWaiting(t, Options{Latency: Latency{Commit: fixed(40 * time.Millisecond)}})
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("v"))
	done := make(chan error, 1)
	go func() { done <- tr.Commit() }()
	if err, took := advanceUntil(fake, time.Millisecond, done); err != nil || took != 40*time.Millisecond {
		t.Fatalf("commit took %v (%v), want 40ms", took, err)
	}
}

func TestLatencyIsSeeded(t *testing.T) {
	sample := func() []time.Duration {
		db := Open(Options{Seed: 42, Latency: FDBLatency()})
		defer db.Close()
		var out []time.Duration
		for range 5 {
			out = append(out, db.delay(db.opts.Latency.Read))
		}
		return out
	}
	a, b := sample(), sample()
	for i := range a {
		if a[i] != b[i] || a[i] < 100*time.Microsecond || a[i] > time.Millisecond {
			t.Fatalf("samples %v vs %v", a, b)
		}
	}
}

// A cancel while the commit is in flight is maybe-committed: before the
// apply point (half the commit latency) nothing is written, after it the
// write is there.
func TestCancelDuringCommit(t *testing.T) {
	for _, c := range []struct {
		after     time.Duration
		committed bool
	}{{30 * time.Millisecond, false}, {150 * time.Millisecond, true}} {
		db, fake := openWaiting(t, Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
		key := fmt.Sprint("k", c.after)
		tr := begin(t, db)
		tr.Set([]byte(key), []byte("v"))
		done := make(chan error, 1)
		start := fake.Now()
		go func() { done <- tr.Commit() }()
		// Step the commit to the moment of the cancel.
		for fake.Now().Sub(start) < c.after {
			waitSleeping(fake, 1)
			fake.Advance(time.Millisecond)
		}
		tr.Cancel()
		err := <-done
		wantCode(t, err, 1025)
		if !kv.IsMaybeCommitted(err) {
			t.Fatalf("cancel during commit not maybe-committed: %#v", err)
		}
		if got := read(t, db, key) != "<nil>"; got != c.committed {
			t.Fatalf("cancel after %v: committed=%v", c.after, got)
		}
	}
}

// A transaction timeout (50 ms on the engine clock) strikes a commit that
// takes 200 ms of latency while it is in flight: the wait clock never
// moves, so only the timeout can end the commit.
func TestTimeoutDuringCommit(t *testing.T) {
	db, fake := openWaiting(t, Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
	tr := begin(t, db)
	tr.Options().SetTimeout(50)
	tr.Set([]byte("k"), []byte("v"))
	err := tr.Commit()
	wantCode(t, err, 1031)
	if !kv.IsMaybeCommitted(err) {
		t.Fatalf("timeout during commit not maybe-committed: %#v", err)
	}
	if !fake.Now().Equal(waitEpoch) {
		t.Fatal("the wait clock moved")
	}
	// OnError refuses to retry a timeout and hands back the commit's
	// error, still maybe-committed, as the FDB adapter does.
	if rerr := tr.OnError(err); kv.Code(rerr) != 1031 || !kv.IsMaybeCommitted(rerr) {
		t.Fatalf("OnError after a timeout during commit = %#v, want the maybe-committed 1031", rerr)
	}
}
