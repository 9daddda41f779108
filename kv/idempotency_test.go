package kv_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// counterKey is bumped once per applied commit of the tests below, so a
// duplicate shows as a count above 1.
var counterKey = []byte("counter")

func one() []byte { return binary.LittleEndian.AppendUint64(nil, 1) }

func count(t *testing.T, db kv.Database) uint64 {
	t.Helper()
	var n uint64
	err := db.ReadTransact(context.Background(), func(rt kv.ReadTransaction) error {
		v, err := rt.Get(counterKey).Get()
		if err != nil || v == nil {
			return err
		}
		n = binary.LittleEndian.Uint64(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bump runs one Transact that adds 1 to the counter, with the fault
// injection switched on for the first attempt only and automatic
// idempotency set on the first attempt when idempotent. It returns the
// number of attempts and Transact's error.
func bump(t *testing.T, f *kv.FaultyDB, idempotent bool) (int, error) {
	t.Helper()
	attempts := 0
	f.SetEnabled(true)
	err := f.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		if attempts == 1 && idempotent {
			if err := tr.Options().SetAutomaticIdempotency(); err != nil {
				return err
			}
		}
		if attempts > 1 {
			f.SetEnabled(false) // the retry commits cleanly
		}
		if attempts > 5 {
			t.Fatalf("fn ran %d times", attempts)
		}
		tr.Add(counterKey, one())
		return nil
	})
	f.SetEnabled(false)
	return attempts, err
}

// With automatic idempotency, a commit that applied but came back 1021 is
// reported as committed, as FDB 7.3's client resolves it: fn runs once and
// the write is applied once. Without the option, the same fault makes a
// blind retry apply it twice (why the queue keeps a marker).
func TestAutomaticIdempotencyResolvesAppliedUnknown(t *testing.T) {
	for _, c := range []struct {
		idempotent   bool
		wantAttempts int
		wantCount    uint64
	}{
		{idempotent: true, wantAttempts: 1, wantCount: 1},
		{idempotent: false, wantAttempts: 2, wantCount: 2},
	} {
		raw := memkv.Open(memkv.Options{})
		f := kv.WithFaults(raw, kv.Faults{UnknownCommitted: 1})
		attempts, err := bump(t, f, c.idempotent)
		if err != nil {
			t.Fatalf("idempotent=%v: Transact = %v", c.idempotent, err)
		}
		if attempts != c.wantAttempts || count(t, raw) != c.wantCount {
			t.Fatalf("idempotent=%v: %d attempts, counter %d; want %d, %d", c.idempotent, attempts, count(t, raw), c.wantAttempts, c.wantCount)
		}
		if f.Stats().UnknownCommitted != 1 {
			t.Fatalf("idempotent=%v: faults %+v, want one applied 1021", c.idempotent, f.Stats())
		}
	}
}

// With automatic idempotency, a commit that was dropped and came back 1021
// is reported as 1007 transaction_too_old, retryable and not committed
// (FDB's tryCommit throws transaction_too_old when the ID is not found):
// Transact retries and the write lands once.
func TestAutomaticIdempotencyResolvesDroppedUnknown(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	f := kv.WithFaults(raw, kv.Faults{UnknownNotCommitted: 1})
	attempts, err := bump(t, f, true)
	if err != nil || kv.IsMaybeCommitted(err) {
		t.Fatalf("Transact = %v", err)
	}
	if attempts != 2 || count(t, raw) != 1 {
		t.Fatalf("%d attempts, counter %d; want 2, 1", attempts, count(t, raw))
	}

	// The attempt itself, outside a retry loop.
	tr, err := f.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Options().SetAutomaticIdempotency(); err != nil {
		t.Fatal(err)
	}
	tr.Add(counterKey, one())
	f.SetEnabled(true)
	err = tr.Commit()
	f.SetEnabled(false)
	if kv.Code(err) != 1007 || !kv.IsRetryableNotCommitted(err) || kv.IsMaybeCommitted(err) {
		t.Fatalf("dropped commit with the option: %v, want a retryable, not committed 1007", err)
	}
	if count(t, raw) != 1 {
		t.Fatalf("counter %d after a dropped commit, want 1", count(t, raw))
	}
}

// The option set once holds through OnError and Reset in the fault wrapper
// too; a commit resolved as committed reports its versionstamp but, as in
// FDB, GetCommittedVersion -1.
func TestAutomaticIdempotencyKeptAndVersions(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	f := kv.WithFaults(raw, kv.Faults{UnknownCommitted: 1})
	f.SetEnabled(false)
	tr, err := f.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Options().SetAutomaticIdempotency(); err != nil {
		t.Fatal(err)
	}
	if err := tr.OnError(kv.ErrNotCommitted); err != nil {
		t.Fatal(err)
	}
	tr.Reset()
	tr.Add(counterKey, one())
	stamp := tr.GetVersionstamp()
	f.SetEnabled(true)
	err = tr.Commit()
	f.SetEnabled(false)
	if err != nil {
		t.Fatalf("applied 1021 with the option after OnError and Reset: %v, want nil", err)
	}
	if vs, err := stamp.Get(); err != nil || len(vs) != 10 {
		t.Fatalf("versionstamp after a resolved commit: %x, %v", vs, err)
	}
	if cv, err := tr.GetCommittedVersion(); err != nil || cv != -1 {
		t.Fatalf("GetCommittedVersion after a resolved commit = %d, %v; want -1 as FDB reports", cv, err)
	}
	if count(t, raw) != 1 {
		t.Fatalf("counter %d, want 1", count(t, raw))
	}
	// The next attempt commits normally and has its version again.
	tr.Reset()
	tr.Add(counterKey, one())
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	if cv, err := tr.GetCommittedVersion(); err != nil || cv <= 0 {
		t.Fatalf("GetCommittedVersion after a normal commit = %d, %v", cv, err)
	}
}

// The option does not resolve a timeout or cancellation that struck the
// commit in flight: FDB's RYW commit returns on them before the lookup, and
// the option's own description warns of it. They stay maybe-committed.
func TestAutomaticIdempotencyLeavesTimeoutsUnknown(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  kv.Faults
		code int
	}{
		{"timed out after apply", kv.Faults{TimedOutCommitted: 1}, 1031},
		{"timed out before apply", kv.Faults{TimedOutNotCommitted: 1}, 1031},
		{"cancelled after apply", kv.Faults{CancelledCommitted: 1}, 1025},
		{"cancelled before apply", kv.Faults{CancelledNotCommitted: 1}, 1025},
	} {
		raw := memkv.Open(memkv.Options{})
		f := kv.WithFaults(raw, c.cfg)
		attempts, err := bump(t, f, true)
		if kv.Code(err) != c.code || !kv.IsMaybeCommitted(err) || attempts != 1 {
			t.Fatalf("%s: Transact = %v after %d attempts, want a maybe-committed %d after 1", c.name, err, attempts, c.code)
		}
	}
}

// 1022 commit_unknown_result_fatal, which FDB reports when the IDs it would
// look in had expired, leaves the outcome unknown and is not retried.
func TestCommitUnknownResultFatalIsMaybeCommitted(t *testing.T) {
	err := kv.ErrCommitUnknownResultFatal
	if !kv.IsMaybeCommitted(err) || kv.IsRetryable(err) || kv.IsRetryableNotCommitted(err) {
		t.Fatalf("1022: maybe %v retryable %v", kv.IsMaybeCommitted(err), kv.IsRetryable(err))
	}
	if got := err.Error(); got != "fdb error 1022 (commit_unknown_result_fatal)" {
		t.Fatalf("1022 reads %q", got)
	}
}
