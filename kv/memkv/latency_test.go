package memkv

import (
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

func fixed(d time.Duration) LatencyRange { return LatencyRange{Min: d, Max: d} }

func TestFuturesOverlap(t *testing.T) {
	db := Open(Options{Latency: Latency{GRV: fixed(20 * time.Millisecond), Read: fixed(30 * time.Millisecond)}})
	defer db.Close()
	put(t, db, "k", "v")
	tr := begin(t, db)
	start := time.Now()
	var fs []kv.Future[[]byte]
	for i := range 10 {
		fs = append(fs, tr.Get([]byte(fmt.Sprint("k", i))))
	}
	rr := tr.GetRange(rng("a", "z"), kv.RangeOptions{})
	if time.Since(start) > 10*time.Millisecond {
		t.Fatal("issuing reads blocked")
	}
	for _, f := range fs {
		if _, err := f.Get(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rr.GetSliceWithError(); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if d < 50*time.Millisecond || d > 120*time.Millisecond {
		t.Fatalf("11 overlapping reads took %v, want about GRV+read = 50ms", d)
	}
	// The read version is taken once.
	start = time.Now()
	mustGet(t, tr, "k")
	if d := time.Since(start); d < 30*time.Millisecond || d > 60*time.Millisecond {
		t.Fatalf("second read took %v, want the read latency alone", d)
	}
}

func TestCommitLatency(t *testing.T) {
	db := Open(Options{Latency: Latency{Commit: fixed(40 * time.Millisecond)}})
	defer db.Close()
	tr := begin(t, db)
	tr.Set([]byte("k"), []byte("v"))
	start := time.Now()
	mustCommit(t, tr)
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("commit took %v", d)
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
// apply point nothing is written, after it the write is there.
func TestCancelDuringCommit(t *testing.T) {
	db := Open(Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
	defer db.Close()
	for _, c := range []struct {
		after     time.Duration
		committed bool
	}{{30 * time.Millisecond, false}, {150 * time.Millisecond, true}} {
		key := fmt.Sprint("k", c.after)
		tr := begin(t, db)
		tr.Set([]byte(key), []byte("v"))
		go func() {
			time.Sleep(c.after)
			tr.Cancel()
		}()
		err := tr.Commit()
		wantCode(t, err, 1025)
		if !kv.IsMaybeCommitted(err) {
			t.Fatalf("cancel during commit not maybe-committed: %#v", err)
		}
		if got := read(t, db, key) != "<nil>"; got != c.committed {
			t.Fatalf("cancel after %v: committed=%v", c.after, got)
		}
	}
}

func TestTimeoutDuringCommit(t *testing.T) {
	db := Open(Options{Latency: Latency{Commit: fixed(200 * time.Millisecond)}})
	defer db.Close()
	tr := begin(t, db)
	tr.Options().SetTimeout(50)
	tr.Set([]byte("k"), []byte("v"))
	err := tr.Commit()
	wantCode(t, err, 1031)
	if !kv.IsMaybeCommitted(err) {
		t.Fatalf("timeout during commit not maybe-committed: %#v", err)
	}
	// OnError refuses to retry a timeout and hands back the commit's
	// error, still maybe-committed, as the FDB adapter does.
	if rerr := tr.OnError(err); kv.Code(rerr) != 1031 || !kv.IsMaybeCommitted(rerr) {
		t.Fatalf("OnError after a timeout during commit = %#v, want the maybe-committed 1031", rerr)
	}
}
