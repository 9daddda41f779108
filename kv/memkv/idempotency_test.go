package memkv

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Automatic idempotency is kept through OnError and Reset, like every option
// of the kv contract.
func TestAutomaticIdempotencyKept(t *testing.T) {
	db, _ := newTestDB(t)
	tr := begin(t, db)
	if err := tr.Options().SetAutomaticIdempotency(); err != nil {
		t.Fatal(err)
	}
	if err := tr.OnError(kv.ErrNotCommitted); err != nil {
		t.Fatal(err)
	}
	if !tr.idempotent {
		t.Fatal("option lost by OnError")
	}
	tr.Reset()
	if !tr.idempotent {
		t.Fatal("option lost by Reset")
	}
	tr.Set([]byte("k"), []byte("v"))
	mustCommit(t, tr)
	if got := read(t, db, "k"); got != "v" {
		t.Fatalf("k = %q after a commit with the option", got)
	}
}

// With automatic idempotency a cancellation or timeout striking the commit
// in flight is still maybe-committed, as in FDB: the RYW commit returns on
// its reset promise before the idempotency lookup could end.
func TestAutomaticIdempotencyLeavesInFlightFaultsUnknown(t *testing.T) {
	t.Run("cancel after apply", func(t *testing.T) {
		db, fake := openWaiting(t, Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
		tr := begin(t, db)
		if err := tr.Options().SetAutomaticIdempotency(); err != nil {
			t.Fatal(err)
		}
		tr.Set([]byte("k"), []byte("v"))
		done := make(chan error, 1)
		start := fake.Now()
		go func() { done <- tr.Commit() }()
		for fake.Now().Sub(start) < 150*time.Millisecond {
			waitSleeping(fake, 1)
			fake.Advance(time.Millisecond)
		}
		tr.Cancel()
		err := <-done
		wantCode(t, err, 1025)
		if !kv.IsMaybeCommitted(err) {
			t.Fatalf("cancel during commit with the option: %#v, want maybe-committed", err)
		}
		if got := read(t, db, "k"); got != "v" {
			t.Fatalf("k = %q, want the write applied before the cancel", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		db, _ := openWaiting(t, Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
		tr := begin(t, db)
		if err := tr.Options().SetAutomaticIdempotency(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Options().SetTimeout(50); err != nil {
			t.Fatal(err)
		}
		tr.Set([]byte("k"), []byte("v"))
		err := tr.Commit()
		wantCode(t, err, 1031)
		if !kv.IsMaybeCommitted(err) {
			t.Fatalf("timeout during commit with the option: %#v, want maybe-committed", err)
		}
	})
}
