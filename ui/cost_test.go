package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/ui"
)

// TestPageCostBounded: what a page reads depends on the number of task
// types and tenants and on the count's budget, not on the backlog. Each
// page is measured over a queue of 2 types of 3 tenants each with 600 jobs
// per type, then 12,000 (more than the budget); the range reads must not
// grow and the keys read must stay within the budget. -v logs the figures
// (docs/ui.md quotes them).
func TestPageCostBounded(t *testing.T) {
	const types, budget = 2, 10_000
	measure := func(perType int) map[string]kv.Stats {
		m := memkv.Open(memkv.Options{})
		defer m.Close()
		db := kv.WithCounters(m)
		ctx := context.Background()
		q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"c"}), testOptions(quick.Options{Clock: clock.NewFake(epoch)}))
		if err != nil {
			t.Fatal(err)
		}
		for i := range types {
			for n := 0; n < perType; n += 100 {
				jobs := make([]quick.NewJob, 100)
				for j := range jobs {
					jobs[j] = quick.NewJob{TaskType: fmt.Sprint("type", i), ItemSpace: fmt.Sprint("tenant", j%3)}
				}
				if _, err := q.Enqueue(ctx, jobs...); err != nil {
					t.Fatal(err)
				}
			}
		}
		h, err := ui.New(ui.Config{Queue: q, NoSampler: true})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		out := map[string]kv.Stats{}
		for _, p := range []string{"/", "/tenants", "/zone?type=type0&tenant=tenant0", "/jobs?type=type0", "/retries?type=type0", "/dead?type=type0", "/cron", "/workers"} {
			before := db.Stats()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
			if w.Code != 200 {
				t.Fatalf("GET %s = %d", p, w.Code)
			}
			out[p] = db.Stats().Sub(before)
		}
		before := db.Stats()
		if err := h.Sample(ctx); err != nil {
			t.Fatal(err)
		}
		out["Sample"] = db.Stats().Sub(before)
		return out
	}
	small, big := measure(600), measure(12_000)
	for p, s := range big {
		t.Logf("%-32s %d jobs per type: %d read versions, %d point reads, %d range reads, %d keys read",
			p, 12_000, s.ReadVersions, s.Reads, s.RangeReads, s.KeysRead)
		if p == "/retries?type=type0" {
			// The retries page filters the scheduled jobs: List reads them
			// in chunks of 500 keys up to its budget of 5,000 (10 chunks),
			// beside its pointer batches. Bounded, but more with a backlog.
			if s.RangeReads > 20 {
				t.Errorf("%s: %d range reads, over List's bound of 20", p, s.RangeReads)
			}
		} else if s.RangeReads > small[p].RangeReads {
			t.Errorf("%s: %d range reads with 12,000 jobs per type, %d with 600", p, s.RangeReads, small[p].RangeReads)
		}
		// A count reads at most about budget keys per type and a zone at
		// most about 10,000 (each lane one past its share); a page of the
		// job list and the workers' leased jobs at most their limits.
		if max := int64(types*(budget+100)) + 10_100 + 600; s.KeysRead > max {
			t.Errorf("%s: %d keys read, over %d", p, s.KeysRead, max)
		}
	}
}
