package memkv

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
)

func TestMVCCWindow(t *testing.T) {
	db, clk := newTestDB(t)
	put(t, db, "k", "v")

	// Reads inside the window work; after it they fail with 1007.
	tr := begin(t, db)
	mustGet(t, tr, "k")
	clk.Advance(4 * time.Second)
	mustGet(t, tr, "k")
	clk.Advance(1100 * time.Millisecond)
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1007)
	_, err = tr.GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
	wantCode(t, err, 1007)
	// 1007 is retryable: OnError resets and the next attempt works.
	if err := tr.OnError(err); err != nil {
		t.Fatal(err)
	}
	mustGet(t, tr, "k")

	// A commit after the window fails with 1007, even a blind write whose
	// read version was taken explicitly.
	tr = begin(t, db)
	tr.GetReadVersion().Get()
	tr.Set([]byte("k"), []byte("late"))
	clk.Advance(6 * time.Second)
	wantCode(t, tr.Commit(), 1007)
	if got := read(t, db, "k"); got != "v" {
		t.Fatalf("k = %q", got)
	}

	// A commit with no read version takes one at commit: no 1007.
	tr = begin(t, db)
	tr.Set([]byte("k"), []byte("blind"))
	clk.Advance(6 * time.Second)
	mustCommit(t, tr)

	// A read answered by the transaction's own writes needs no storage, so
	// the window does not apply to it.
	tr = begin(t, db)
	mustGet(t, tr, "k")
	tr.Set([]byte("mine"), []byte("x"))
	clk.Advance(6 * time.Second)
	if got := string(mustGet(t, tr, "mine")); got != "x" {
		t.Fatal(got)
	}
	// A read-only commit is not resolved, so it succeeds after the window.
	ro := begin(t, db)
	mustGet(t, ro, "k")
	clk.Advance(6 * time.Second)
	mustCommit(t, ro)
}

func TestMVCCWindowOption(t *testing.T) {
	clk := clock.NewFake(testEpoch)
	db := Open(Options{Clock: clk, MVCCWindow: time.Second})
	defer db.Close()
	tr := begin(t, db)
	tr.GetReadVersion().Get()
	clk.Advance(1500 * time.Millisecond)
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1007)
}

func TestTimeout(t *testing.T) {
	db, clk := newTestDB(t)
	tr := begin(t, db)
	if err := tr.Options().SetTimeout(-1); !isCode(err, 2006) {
		t.Fatalf("negative timeout: %v", err)
	}
	tr.Options().SetTimeout(1000)
	mustGet(t, tr, "k")
	clk.Advance(1001 * time.Millisecond)
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1031)
	if kv.IsMaybeCommitted(err) {
		t.Fatal("a timeout before commit is not maybe-committed")
	}
	wantCode(t, tr.Commit(), 1031)
	// Not retryable, and the timeout bounds OnError too.
	wantCode(t, tr.OnError(kv.ErrNotCommitted), 1031)

	// The timeout survives OnError: it bounds the whole retry loop.
	tr = begin(t, db)
	tr.Options().SetTimeout(1000)
	clk.Advance(600 * time.Millisecond)
	if err := tr.OnError(kv.ErrNotCommitted); err != nil {
		t.Fatal(err)
	}
	clk.Advance(600 * time.Millisecond)
	_, err = tr.Get([]byte("k")).Get()
	wantCode(t, err, 1031)
	// Reset restarts it, options kept.
	tr.Reset()
	mustGet(t, tr, "k")
	clk.Advance(1001 * time.Millisecond)
	_, err = tr.Get([]byte("k")).Get()
	wantCode(t, err, 1031)

	// Zero removes the bound.
	tr = begin(t, db)
	tr.Options().SetTimeout(1000)
	tr.Options().SetTimeout(0)
	clk.Advance(time.Hour)
	tr.Set([]byte("k"), []byte("v"))
	mustCommit(t, tr)
}

// With a real engine clock, the timeout's timer wakes a read pending on
// its latency: the wait clock never moves, so only the timeout ends it.
func TestTimeoutRealClockWakesPendingRead(t *testing.T) {
	db, fake := openWaiting(t, Options{Latency: Latency{Read: LatencyRange{Min: time.Second, Max: time.Second}}})
	tr := begin(t, db)
	tr.Options().SetTimeout(20)
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1031)
	if !fake.Now().Equal(waitEpoch) {
		t.Fatal("the read's latency elapsed instead")
	}
}

func TestRetryLimit(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	if err := tr.Options().SetRetryLimit(-2); !isCode(err, 2006) {
		t.Fatalf("retry limit -2: %v", err)
	}
	tr.Options().SetRetryLimit(2)
	for i := range 2 {
		if err := tr.OnError(kv.ErrNotCommitted); err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
	}
	wantCode(t, tr.OnError(kv.ErrNotCommitted), 1020)
	// The transaction is then cancelled until Reset.
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1025)
	tr.Reset()
	mustGet(t, tr, "k")

	// Transact honours it: a transaction that always conflicts gives up.
	var attempts int
	err = db.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		tr.Options().SetRetryLimit(3)
		return kv.ErrNotCommitted
	})
	wantCode(t, err, 1020)
	if attempts != 4 {
		t.Fatalf("attempts %d", attempts)
	}
}

func TestOnError(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("v"))
	if err := tr.OnError(kv.ErrCommitUnknownResult); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, tr) // the reset dropped the write: nothing to commit
	if got := read(t, db, "k"); got != "<nil>" {
		t.Fatalf("k = %q", got)
	}
	for _, code := range []int{1007, 1009, 1020, 1021, 1037, 1038, 1039, 1051, 1213, 1223} {
		tr := begin(t, db)
		if err := tr.OnError(kv.Error{Code: code}); err != nil {
			t.Errorf("code %d not retried: %v", code, err)
		}
	}
	for _, code := range []int{1025, 1031, 1032, 1036, 2101, 2102, 2103} {
		tr := begin(t, db)
		wantCode(t, tr.OnError(kv.Error{Code: code}), code)
	}
	plain := errors.New("not fdb")
	if err := begin(t, db).OnError(plain); err != plain {
		t.Fatalf("plain error: %v", err)
	}
	wantCode(t, begin(t, db).OnError(nil), 2000)
}

func TestOnErrorBackoffInterruptedByCancel(t *testing.T) {
	db, fake := openWaiting(t, Options{Backoff: Backoff{Initial: 10 * time.Second, Max: 10 * time.Second}, Seed: 3})
	tr := begin(t, db)
	go func() {
		waitSleeping(fake, 1) // the backoff has begun
		tr.Cancel()
	}()
	// The wait clock never moves: only the cancel can end the backoff.
	err := tr.OnError(kv.ErrNotCommitted)
	wantCode(t, err, 1025)
}

func TestCancel(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("v"))
	stamp := tr.GetVersionstamp()
	tr.Cancel()
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 1025)
	wantCode(t, tr.Commit(), 1025)
	_, err = stamp.Get()
	wantCode(t, err, 1025)
	wantCode(t, tr.OnError(kv.ErrNotCommitted), 1025)
	if got := read(t, db, "k"); got != "<nil>" {
		t.Fatalf("k = %q", got)
	}
	tr.Reset()
	tr.Set([]byte("k"), []byte("v"))
	mustCommit(t, tr)

	// Transact cancels through ctx and returns both errors.
	ctx, cancel := context.WithCancel(context.Background())
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		cancel()
		// context.AfterFunc cancels the transaction from another
		// goroutine; reads fail from then on.
		for {
			if _, err := tr.Get([]byte("k")).Get(); err != nil {
				return err
			}
			runtime.Gosched()
		}
	})
	if !errors.Is(err, context.Canceled) || !isCode(err, 1025) {
		t.Fatalf("Transact after cancel: %v", err)
	}
}

func TestUseAfterCommit(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("v"))
	mustCommit(t, tr)
	v, _ := tr.GetCommittedVersion()
	if v <= 0 {
		t.Fatalf("committed version %d", v)
	}
	wantCode(t, tr.Commit(), 2017)
	_, err := tr.Get([]byte("k")).Get()
	wantCode(t, err, 2017)
	_, err = tr.GetVersionstamp().Get()
	wantCode(t, err, 2017)
	tr.Set([]byte("j"), []byte("v"))
	wantCode(t, tr.Commit(), 2017)
	// OnError then reports the attempt's failure (RYW's resetPromise).
	wantCode(t, tr.OnError(kv.ErrNotCommitted), 2017)
	tr.Reset()
	tr.Set([]byte("j"), []byte("v"))
	mustCommit(t, tr)
}

func TestOptionsRecordedAndKept(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	o := tr.Options()
	if err := o.SetPriorityBatch(); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"a", "b", "c", "a", "d", "e"} {
		if err := o.SetTag(tag); err != nil {
			t.Fatalf("tag %q: %v", tag, err)
		}
	}
	if err := o.SetAutoThrottleTag("f"); !isCode(err, 2109) {
		t.Fatalf("sixth tag: %v", err)
	}
	if err := o.SetTag(strings.Repeat("x", 256)); !isCode(err, 2110) {
		t.Fatalf("long tag: %v", err)
	}
	tr.OnError(kv.ErrNotCommitted)
	tr.Reset()
	if !tr.batch || len(tr.tags) != 5 {
		t.Fatalf("options lost: batch=%v tags=%v", tr.batch, tr.tags)
	}
}

func TestConcurrentReadsOnOneTransaction(t *testing.T) {
	db, fake := openWaiting(t, Options{Latency: Latency{Read: LatencyRange{Min: 20 * time.Millisecond, Max: 20 * time.Millisecond}}})
	settle(fake, func() { put(t, db, "k", "v") })
	tr := begin(t, db)
	var ok atomic.Int32
	done := make(chan struct{}, 10)
	for range 10 {
		go func() {
			defer func() { done <- struct{}{} }()
			if v, err := tr.Get([]byte("k")).Get(); err == nil && string(v) == "v" {
				ok.Add(1)
			}
		}()
	}
	// All ten wait on the clock before it moves, so they overlap.
	waitSleeping(fake, 10)
	all := make(chan struct{})
	go func() {
		for range 10 {
			<-done
		}
		close(all)
	}()
	if _, took := advanceUntil(fake, time.Millisecond, all); took != 20*time.Millisecond {
		t.Fatalf("ten parallel reads took %v, want one read's 20ms", took)
	}
	if ok.Load() != 10 {
		t.Fatalf("%d reads ok", ok.Load())
	}
}
