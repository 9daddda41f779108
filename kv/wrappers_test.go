package kv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

func TestCountersCountEachKind(t *testing.T) {
	db := kv.WithCounters(memkv.Open(memkv.Options{}))
	ctx := context.Background()
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("a"), []byte("12345"))
		tr.Set([]byte("b"), []byte("1"))
		tr.Add([]byte("n"), []byte{1, 0, 0, 0, 0, 0, 0, 0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Mutations != 3 || st.BytesWritten != 1+5+1+1+1+8 || st.Commits != 1 || st.ReadVersions != 0 {
		t.Fatalf("after a blind write: %v", st)
	}
	before := db.Stats()
	err = db.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
		a := rt.Get([]byte("a"))
		missing := rt.Snapshot().Get([]byte("zz"))
		if _, err := a.Get(); err != nil {
			return err
		}
		if _, err := missing.Get(); err != nil {
			return err
		}
		_, err := rt.GetRange(kv.KeyRange{Begin: []byte("a"), End: []byte("c")}, kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := db.Stats().Sub(before)
	want := kv.Stats{ReadVersions: 1, Reads: 2, RangeReads: 1, KeysRead: 3, BytesRead: 5 + 2 + 6}
	if d != want {
		t.Fatalf("reads counted %v, want %v", d, want)
	}
	if got := d.Add(before).Sub(before); got != d {
		t.Fatalf("Add/Sub do not invert: %v", got)
	}
}

func TestCountersCountConflictsAndRetries(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	db := kv.WithCounters(raw)
	ctx := context.Background()
	attempts := 0
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		attempts++
		if _, err := tr.Get([]byte("k")).Get(); err != nil {
			return err
		}
		if attempts == 1 {
			// Another client writes the key we read: this attempt conflicts.
			if err := raw.Transact(ctx, func(o kv.Transaction) error { o.Set([]byte("k"), []byte("x")); return nil }); err != nil {
				return err
			}
		}
		tr.Set([]byte("k"), []byte("y"))
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("err=%v attempts=%d", err, attempts)
	}
	st := db.Stats()
	if st.Commits != 2 || st.Conflicts != 1 || st.ReadVersions != 2 || st.Mutations != 2 {
		t.Fatalf("stats %v: want 2 commits, 1 conflict, 2 read versions, 2 mutations", st)
	}
}

func TestFaultsInjectBothUnknownOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		faults    kv.Faults
		committed bool
		code      int
	}{
		{"unknown-committed", kv.Faults{UnknownCommitted: 1}, true, 1021},
		{"unknown-not-committed", kv.Faults{UnknownNotCommitted: 1}, false, 1021},
		{"conflict", kv.Faults{Conflict: 1}, false, 1020},
		{"timed-out-committed", kv.Faults{TimedOutCommitted: 1}, true, 1031},
		{"timed-out-not-committed", kv.Faults{TimedOutNotCommitted: 1}, false, 1031},
		{"cancelled-committed", kv.Faults{CancelledCommitted: 1}, true, 1025},
		{"cancelled-not-committed", kv.Faults{CancelledNotCommitted: 1}, false, 1025},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := memkv.Open(memkv.Options{})
			f := kv.WithFaults(raw, tc.faults)
			tr, err := f.CreateTransaction()
			if err != nil {
				t.Fatal(err)
			}
			tr.Set([]byte("k"), []byte("v"))
			err = tr.Commit()
			if kv.Code(err) != tc.code {
				t.Fatalf("commit error %v, want code %d", err, tc.code)
			}
			if kv.IsMaybeCommitted(err) != (tc.code != 1020) {
				t.Fatalf("IsMaybeCommitted(%v) wrong", err)
			}
			var got []byte
			if err := raw.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
				got, err = rt.Get([]byte("k")).Get()
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.committed {
				t.Fatalf("applied=%v, want %v", got != nil, tc.committed)
			}
			// Read-only commits are never faulted.
			ro, _ := f.CreateTransaction()
			if err := ro.Commit(); err != nil {
				t.Fatalf("read-only commit faulted: %v", err)
			}
			st := f.Stats()
			if st.Total() != 1 || len(st.Missing(tc.faults)) != 0 {
				t.Fatalf("fault stats %+v", st)
			}
		})
	}
}

// A slow commit moves the injected clock by its delay, then commits.
func TestFaultsSlowCommitAdvancesTheClock(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	var moved time.Duration
	f := kv.WithFaults(raw, kv.Faults{SlowCommit: 1, Advance: func(d time.Duration) { moved += d }})
	if err := f.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte("k"), []byte("v"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.SlowCommits != 1 || moved != 4500*time.Millisecond {
		t.Fatalf("slow commits %d, clock moved %v; want 1 and 4.5s", st.SlowCommits, moved)
	}
	if missing := (kv.FaultStats{}).Missing(kv.Faults{SlowCommit: 0.5, Conflict: 0.1}); len(missing) != 2 {
		t.Fatalf("Missing = %v, want both kinds", missing)
	}
}

func TestFaultsRetryLoopConverges(t *testing.T) {
	raw := memkv.Open(memkv.Options{})
	f := kv.WithFaults(raw, kv.Faults{Seed: 7, UnknownNotCommitted: 0.3, Conflict: 0.3})
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if err := f.Transact(ctx, func(tr kv.Transaction) error {
			tr.Add([]byte("n"), []byte{1})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var v []byte
	if err := raw.ReadTransact(ctx, func(rt kv.ReadTransaction) error {
		var err error
		v, err = rt.Get([]byte("n")).Get()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Faults that never applied were retried; none applied twice.
	if v[0] != 50 {
		t.Fatalf("counter %d, want 50", v[0])
	}
}

func TestRetryStopsOnContextAndNonFDBErrors(t *testing.T) {
	db := memkv.Open(memkv.Options{})
	boom := errors.New("boom")
	calls := 0
	err := db.Transact(context.Background(), func(kv.Transaction) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("non-FDB error: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = db.Transact(ctx, func(kv.Transaction) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		err                          error
		retryable, maybe, notCommitd bool
	}{
		{kv.ErrNotCommitted, true, false, true},
		{kv.ErrCommitUnknownResult, true, true, false},
		{kv.ErrClusterVersionChange, true, true, false},
		{kv.ErrTransactionTooOld, true, false, true},
		{kv.ErrProxyTagThrottled, true, false, true},
		{kv.ErrTransactionCancelled, false, false, false},
		{kv.Error{Code: 1031, DuringCommit: true}, false, true, false},
		{kv.ErrTransactionTooLarge, false, false, false},
		{errors.New("plain"), false, false, false},
	}
	for _, c := range cases {
		if kv.IsRetryable(c.err) != c.retryable || kv.IsMaybeCommitted(c.err) != c.maybe || kv.IsRetryableNotCommitted(c.err) != c.notCommitd {
			t.Errorf("%v: retryable=%v maybe=%v notCommitted=%v", c.err, kv.IsRetryable(c.err), kv.IsMaybeCommitted(c.err), kv.IsRetryableNotCommitted(c.err))
		}
	}
	wrapped := errors.Join(errors.New("ctx"), kv.Error{Code: 1020})
	if !errors.Is(wrapped, kv.ErrNotCommitted) || kv.Code(wrapped) != 1020 {
		t.Fatal("wrapped error lost its code")
	}
	if got := kv.ErrKeyTooLarge.Error(); got != "fdb error 2102 (key_too_large)" {
		t.Fatalf("message %q", got)
	}
}

func TestKeyHelpers(t *testing.T) {
	if got := kv.Strinc([]byte{1, 0xff, 0xff}); string(got) != "\x02" {
		t.Fatalf("Strinc = %x", got)
	}
	if kv.Strinc([]byte{0xff}) != nil {
		t.Fatal("Strinc of 0xff should be nil")
	}
	r := kv.PrefixRange([]byte("ab"))
	if !r.Contains([]byte("ab\x00")) || r.Contains([]byte("ac")) || !r.Contains([]byte("ab")) {
		t.Fatalf("PrefixRange %q", r)
	}
	if got := kv.SingleKeyRange([]byte("k")); string(got.End) != "k\x00" {
		t.Fatalf("SingleKeyRange %q", got)
	}
}
