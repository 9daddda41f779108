//go:build fdb

package fdbkv_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/apple/foundationdb/bindings/go/src/fdb/directory"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

func open(t *testing.T) (kv.Database, fdb.Database, tuple.Subspace) {
	t.Helper()
	db, sub := fdbtest.Open(t)
	raw, ok := fdbkv.FDB(db)
	if !ok {
		t.Fatalf("fdbtest.Open gave %T, not an fdbkv database", db)
	}
	return db, raw, sub
}

func read(t *testing.T, db kv.Database, k []byte) []byte {
	t.Helper()
	var v []byte
	err := db.ReadTransact(context.Background(), func(rt kv.ReadTransaction) error {
		var err error
		v, err = rt.Get(k).Get()
		return err
	})
	if err != nil {
		t.Fatalf("reading %x: %v", k, err)
	}
	return v
}

func TestWrapJoinsTheCallersTransaction(t *testing.T) {
	db, raw, sub := open(t)
	own, joined := sub.Pack(tuple.Tuple{"own"}), sub.Pack(tuple.Tuple{"joined"})
	_, err := raw.Transact(func(tr fdb.Transaction) (any, error) {
		tr.Set(fdb.Key(own), []byte("1"))
		ktr := fdbkv.Wrap(tr)
		v, err := ktr.Get(own).Get() // sees the caller's write
		if err != nil {
			return nil, err
		}
		if string(v) != "1" {
			t.Errorf("Wrap'd Get of the caller's write: got %q, want \"1\"", v)
		}
		ktr.Set(joined, []byte("2"))
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := read(t, db, joined); string(v) != "2" {
		t.Fatalf("write through Wrap: got %q after the caller's commit, want \"2\"", v)
	}

	// The caller aborting drops the joined write too.
	aborted := sub.Pack(tuple.Tuple{"aborted"})
	boom := errors.New("caller gives up")
	_, err = raw.Transact(func(tr fdb.Transaction) (any, error) {
		fdbkv.Wrap(tr).Set(aborted, []byte("x"))
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("aborted caller transaction: got %v", err)
	}
	if v := read(t, db, aborted); v != nil {
		t.Fatalf("write through Wrap in an aborted transaction is visible: %q", v)
	}
}

func TestWrapRead(t *testing.T) {
	db, raw, sub := open(t)
	k := sub.Pack(tuple.Tuple{"k"})
	if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(k, []byte("v"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err := raw.ReadTransact(func(rt fdb.ReadTransaction) (any, error) {
		for _, r := range []kv.ReadTransaction{fdbkv.WrapRead(rt), fdbkv.WrapRead(rt).Snapshot()} {
			v, err := r.Get(k).Get()
			if err != nil {
				return nil, err
			}
			if string(v) != "v" {
				t.Errorf("WrapRead Get: got %q, want \"v\"", v)
			}
			b, e := sub.Range()
			kvs, err := r.GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: 1}).GetSliceWithError()
			if err != nil {
				return nil, err
			}
			if len(kvs) != 1 || !bytes.Equal(kvs[0].Key, k) {
				t.Errorf("WrapRead GetRange: got %v", kvs)
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenDirectory(t *testing.T) {
	db, raw, sub := open(t)
	path := []string{"quickfdb-fdbtest", tuple.Tuple{sub.Bytes()}.String()}
	t.Cleanup(func() {
		if _, err := directory.Root().Remove(raw, path[:1]); err != nil {
			t.Errorf("removing directory %q: %v", path[:1], err)
		}
	})
	p1, err := fdbkv.OpenDirectory(db, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(p1) == 0 {
		t.Fatal("OpenDirectory returned an empty prefix")
	}
	p2, err := fdbkv.OpenDirectory(kv.WithCounters(db), path) // unwrapped
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p1, p2) {
		t.Fatalf("the same path resolved to %x, then %x", p1, p2)
	}
	mem := memkv.Open(memkv.Options{})
	defer mem.Close()
	if _, err := fdbkv.OpenDirectory(mem, path); err == nil {
		t.Fatal("OpenDirectory on memkv succeeded")
	}
}

func TestUnknownMutationFailsAtCommit(t *testing.T) {
	db, _, sub := open(t)
	k := sub.Pack(tuple.Tuple{"k"})
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	tr.Set(k, []byte("v"))
	tr.Atomic(kv.MutationType(99), k, []byte{1})
	if err := tr.Commit(); !errors.Is(err, kv.ErrInvalidMutationType) {
		t.Fatalf("commit with an unknown mutation type: got %v, want 2018", err)
	}
	if v := read(t, db, k); v != nil {
		t.Fatalf("the failed transaction's write is visible: %q", v)
	}
}

func TestCancelBeforeCommitIsNotMaybeCommitted(t *testing.T) {
	db, _, sub := open(t)
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	tr.Set(sub.Pack(tuple.Tuple{"k"}), []byte("v"))
	tr.Cancel()
	err = tr.Commit()
	if !errors.Is(err, kv.ErrTransactionCancelled) {
		t.Fatalf("commit after Cancel: got %v, want 1025", err)
	}
	if kv.IsMaybeCommitted(err) {
		t.Fatalf("commit after Cancel reported maybe-committed: %v", err)
	}
}

func TestResetKeepsOptions(t *testing.T) {
	db, _, sub := open(t)
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Options().SetTimeout(50); err != nil {
		t.Fatal(err)
	}
	tr.Reset()
	time.Sleep(150 * time.Millisecond)
	_, err = tr.Get(sub.Pack(tuple.Tuple{"k"})).Get()
	if !errors.Is(err, kv.ErrTransactionTimedOut) {
		t.Fatalf("read 150ms after Reset with a 50ms timeout: got %v, want 1031", err)
	}
}

func TestWatchWaitAgainAfterContext(t *testing.T) {
	db, _, sub := open(t)
	k := sub.Pack(tuple.Tuple{"w"})
	tr, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	w := tr.Watch(k)
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err = w.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait before any change: got %v, want the context's deadline", err)
	}
	if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(k, []byte("changed"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("Wait after the change: %v", err)
	}

	// Cancel makes Wait fail with 1101.
	tr, err = db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	w = tr.Watch(k)
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Cancel()
	if err := w.Wait(ctx); !errors.Is(err, kv.ErrOperationCancelled) {
		t.Fatalf("Wait after Cancel: got %v, want 1101", err)
	}
}

func TestErrorsAreKVErrors(t *testing.T) {
	db, _, _ := open(t)
	// Keys from \xff on are system keys, unreadable without an option
	// the kv contract does not have: 2004 key_outside_legal_range.
	err := db.ReadTransact(context.Background(), func(rt kv.ReadTransaction) error {
		_, err := rt.Get([]byte("\xff/fdbkv-test")).Get()
		return err
	})
	var ke kv.Error
	if !errors.As(err, &ke) || ke.Code != kv.ErrKeyOutsideLegalRange.Code {
		t.Fatalf("reading a system key: got %v (%T), want kv.Error 2004", err, err)
	}
	// The adapter's errors also read as fdb.Error, for the binding's loop.
	var fe fdb.Error
	if !errors.As(err, &fe) || fe.Code != ke.Code {
		t.Fatalf("errors.As into fdb.Error: got %v, want code %d", fe, ke.Code)
	}
}

// An error met through a Wrap'd transaction is retried by the caller's own
// fdb retry loop: it reads as an fdb.Error.
func TestWrapErrorsRetriedByTheBindingsLoop(t *testing.T) {
	_, raw, sub := open(t)
	k := sub.Pack(tuple.Tuple{"k"})
	attempts := 0
	var first error
	_, err := raw.Transact(func(tr fdb.Transaction) (any, error) {
		attempts++
		if attempts == 1 {
			tr.SetReadVersion(1) // far older than the 5-second window: 1007
		}
		_, err := fdbkv.Wrap(tr).Get(k).Get()
		if attempts == 1 {
			first = err
		}
		return nil, err
	})
	if first == nil {
		t.Skip("version 1 was still readable on this young cluster")
	}
	if !errors.Is(first, kv.ErrTransactionTooOld) {
		t.Fatalf("read at version 1: got %v, want 1007", first)
	}
	if err != nil || attempts != 2 {
		t.Fatalf("fdb.Database.Transact: err %v after %d attempts, want success after 2", err, attempts)
	}
}
