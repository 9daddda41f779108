package memkv

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
)

// fired reports whether w settled within a short wait, and with what.
func fired(w kv.Watch) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := w.Wait(ctx)
	if err == context.DeadlineExceeded {
		return false, nil
	}
	return true, err
}

func mustFire(t *testing.T, w kv.Watch) {
	t.Helper()
	if ok, err := fired(w); !ok || err != nil {
		t.Fatalf("watch fired=%v err=%v, want fired", ok, err)
	}
}

func mustWait(t *testing.T, w kv.Watch) {
	t.Helper()
	if ok, err := fired(w); ok {
		t.Fatalf("watch settled early: %v", err)
	}
}

func watchCommitted(t *testing.T, db *DB, key string) kv.Watch {
	t.Helper()
	tr := begin(t, db)
	w := tr.Watch([]byte(key))
	tr.Set([]byte("unrelated"), []byte("x"))
	mustCommit(t, tr)
	return w
}

func TestWatchFiresOnChange(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "a")
	w := watchCommitted(t, db, "k")
	mustWait(t, w)
	put(t, db, "k", "a") // same value: no change
	mustWait(t, w)
	put(t, db, "k", "b")
	mustFire(t, w)

	w = watchCommitted(t, db, "k")
	db.Transact(t.Context(), func(tr kv.Transaction) error { tr.ClearRange(rng("a", "z")); return nil })
	mustFire(t, w)

	w = watchCommitted(t, db, "missing")
	db.Transact(t.Context(), func(tr kv.Transaction) error { tr.ClearRange(rng("a", "z")); return nil })
	mustWait(t, w) // clearing a missing key changes nothing
	db.Transact(t.Context(), func(tr kv.Transaction) error { tr.Add([]byte("missing"), []byte{1}); return nil })
	mustFire(t, w)
	if n := db.Stats().Watches; n != 0 {
		t.Fatalf("%d watches still armed", n)
	}
}

func TestWatchArmedOnlyByCommit(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "a")
	tr := begin(t, db)
	w := tr.Watch([]byte("k"))
	put(t, db, "k", "b")
	mustWait(t, w) // not armed: its transaction has not committed
	if db.Stats().Watches != 0 {
		t.Fatal("armed before commit")
	}
	// A read-only commit arms it; the value already changed, so it fires.
	mustCommit(t, tr)
	mustFire(t, w)

	// A failed commit fails its watches with the commit's error.
	tr = begin(t, db)
	w = tr.Watch([]byte("k"))
	tr.Set([]byte("x"), []byte("x"))
	put(t, db, "k", "c")
	wantCode(t, tr.Commit(), 1020)
	_, err := fired(w)
	wantCode(t, err, 1020)

	// Resetting an uncommitted transaction fails them with 1025.
	tr = begin(t, db)
	w = tr.Watch([]byte("k"))
	tr.Reset()
	_, err = fired(w)
	wantCode(t, err, 1025)
}

func TestWatchSeesOwnWrites(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "k", "a")
	// The watch compares with the transaction's own write...
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("mine"))
	w := tr.Watch([]byte("k"))
	mustCommit(t, tr)
	mustWait(t, w)
	put(t, db, "k", "other")
	mustFire(t, w)
	// ...and a later write in the same transaction that changes the value
	// fires it at once, as FDB's RYW does.
	tr = begin(t, db)
	w = tr.Watch([]byte("k"))
	tr.Set([]byte("k"), []byte("changed"))
	mustFire(t, w)
	tr.Cancel()
}

func TestWatchCancelAndLimit(t *testing.T) {
	clk := clock.NewFake(testEpoch)
	db := Open(Options{Clock: clk, MaxWatches: 2})
	defer db.Close()
	w1 := watchCommitted(t, db, "a")
	w2 := watchCommitted(t, db, "b")
	w3 := watchCommitted(t, db, "c")
	_, err := fired(w3)
	wantCode(t, err, 1032)
	w1.Cancel()
	_, err = fired(w1)
	wantCode(t, err, 1101)
	w4 := watchCommitted(t, db, "d") // room again after the cancel
	mustWait(t, w4)
	mustWait(t, w2)
	if n := db.Stats().Watches; n != 2 {
		t.Fatalf("armed %d", n)
	}
	db.Close()
	_, err = fired(w2)
	wantCode(t, err, 1101)
}

func TestWatchErrors(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	_, err := fired(tr.Watch([]byte("\xff")))
	wantCode(t, err, 2004)
	_, err = fired(tr.Watch(make([]byte, kv.MaxKeySize+1)))
	wantCode(t, err, 2102)
	tr.Set([]byte("k"), []byte("v"))
	mustCommit(t, tr)
	_, err = fired(tr.Watch([]byte("k")))
	wantCode(t, err, 2017)
}

func TestWatchWaitContext(t *testing.T) {
	db, _ := newTestDB(t)
	w := watchCommitted(t, db, "k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Wait(ctx); err != context.Canceled {
		t.Fatalf("wait: %v", err)
	}
	w.Cancel()
}
