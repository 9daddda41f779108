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
// types, lanes and the scan budget, not on the backlog. Each page is
// measured over a queue of 5 types with 100 jobs each, then 1,000 each,
// with a budget of 10 keys per range; the range reads must not grow and
// the keys read must stay within the budget. -v logs the figures
// (docs/ui.md quotes them).
func TestPageCostBounded(t *testing.T) {
	const types, lanes, budget = 5, 16, 10
	measure := func(perType int) map[string]kv.Stats {
		m := memkv.Open(memkv.Options{})
		defer m.Close()
		db := kv.WithCounters(m)
		ctx := context.Background()
		q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"c"}), quick.Options{Clock: clock.NewFake(epoch), ZoneLanes: lanes}) // TODO(issue 21, console): was Options.Lanes
		if err != nil {
			t.Fatal(err)
		}
		for i := range types {
			for n := 0; n < perType; n += 100 {
				jobs := make([]quick.NewJob, 100)
				for j := range jobs {
					jobs[j] = quick.NewJob{TaskType: fmt.Sprint("type", i)}
				}
				if _, err := q.Enqueue(ctx, jobs...); err != nil {
					t.Fatal(err)
				}
			}
		}
		h, err := ui.New(ui.Config{Queue: q, NoSampler: true, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		out := map[string]kv.Stats{}
		for _, p := range []string{"/", "/lanes", "/jobs?type=type0", "/dead?type=type0", "/cron", "/workers"} {
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
	small, big := measure(100), measure(1000)
	for p, s := range big {
		t.Logf("%-18s %d jobs per type: %d read versions, %d point reads, %d range reads, %d keys read",
			p, 1000, s.ReadVersions, s.Reads, s.RangeReads, s.KeysRead)
		if s.RangeReads > small[p].RangeReads {
			t.Errorf("%s: %d range reads with 1,000 jobs per type, %d with 100", p, s.RangeReads, small[p].RangeReads)
		}
		// Each lane and priority scan reads at most budget+1 keys; a page
		// of the job list reads at most its limit (50) more.
		if max := s.RangeReads*(budget+1) + 51; s.KeysRead > max {
			t.Errorf("%s: %d keys read, over %d", p, s.KeysRead, max)
		}
	}
}
