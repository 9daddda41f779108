package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// TestTenantStartRate: two workers' starts per tenant reach the minute
// counters with their clock rounds; ReadTenantStarts gives the rate over
// the last minute; the purge-presence duty clears old minutes.
func TestTenantStartRate(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	var ws []*Worker
	for _, id := range []string{"a", "b"} {
		w := e.newWorker(Config{ID: id}, func(w *Worker) {
			if err := RegisterRaw(w, "email", noopRaw, HandlerOptions{Concurrency: 4}); err != nil {
				t.Fatal(err)
			}
		})
		ws = append(ws, w)
		e.start(w)
	}
	e.settle(ws...)
	e.step(5*time.Second, time.Second, ws...) // the start-up rounds
	var jobs []quick.NewJob
	for range 12 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	for range 3 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "globex"})
	}
	e.enqueue(jobs...)
	e.waitFor("the jobs to run", func() bool { return ws[0].Stats().Completed+ws[1].Stats().Completed == 15 })
	e.step(6*time.Second, time.Second, ws...)
	rates, err := ReadTenantStarts(e.ctx, e.q, "email", []string{"acme", "globex", "initech"})
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]int64{"acme": 12, "globex": 3, "initech": 0} {
		r := rates[tenant]
		if got := r.LastMinute + r.ThisMinute; got != want {
			t.Fatalf("%s: %d starts counted, want %d (%+v)", tenant, got, want, rates)
		}
		if want > 0 && r.PerSecond <= 0 {
			t.Fatalf("%s: rate %v", tenant, r.PerSecond)
		}
	}
	e.clk.Advance(tenantStartsKeep + 2*time.Minute)
	if _, err := purgePresence(e.ctx, e.q); err != nil {
		t.Fatal(err)
	}
	b, end := tenantStartsSpace(e.q).Range()
	err = e.q.DB().ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: end}, kv.RangeOptions{}).GetSliceWithError()
		if err == nil && len(kvs) != 0 {
			t.Errorf("%d start counters left after the purge", len(kvs))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTenantStartsBounded: a worker counts at most maxTenantTallies
// tenants between rounds, a round adds what it drained once (a committed
// round's counts are not added again), and a failed round's counts go with
// the next.
func TestTenantStartsBounded(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	var ts tenantStarts
	for i := range maxTenantTallies + 50 {
		ts.count("email", fmt.Sprintf("t%04d", i))
	}
	ts.count("email", "t0000")
	round := func(commit bool) {
		t.Helper()
		err := e.q.DB().Transact(context.Background(), func(tr kv.Transaction) error {
			ts.add(tr, tenantStartsSpace(e.q), e.clk.Now())
			if !commit {
				return errNoCommit
			}
			return nil
		})
		if commit && err != nil {
			t.Fatal(err)
		}
		if commit {
			ts.committed()
		}
	}
	round(false) // drained, not committed: kept
	round(true)
	round(true) // nothing new: adds nothing
	rates, err := ReadTenantStarts(e.ctx, e.q, "email", []string{"t0000", "t0001", fmt.Sprintf("t%04d", maxTenantTallies+10)})
	if err != nil {
		t.Fatal(err)
	}
	if r := rates["t0000"]; r.ThisMinute != 2 {
		t.Fatalf("t0000: %+v, want 2 starts", r)
	}
	if r := rates["t0001"]; r.ThisMinute != 1 {
		t.Fatalf("t0001: %+v, want 1 start", r)
	}
	if r := rates[fmt.Sprintf("t%04d", maxTenantTallies+10)]; r.ThisMinute != 0 {
		t.Fatalf("a tenant past the bound was counted: %+v", r)
	}
}

var errNoCommit = fmt.Errorf("test: no commit")
