package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func TestStrip(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{[]int{0, 0, 0}, "···"},
		{[]int{1, 2, 4, 8, 0}, "▁▂▄█·"},
		{[]int{1000, 1, 500}, "█▁▄"},
	} {
		if got := strip(c.in); got != c.want {
			t.Errorf("strip(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := bar(1, 2, 4); got != "██" {
		t.Errorf("bar(1,2,4) = %q", got)
	}
	if got := bar(1, 3, 1); got != "▍" {
		t.Errorf("bar(1,3,1) = %q", got)
	}
}

// fillMany enqueues n jobs of one type: 90% ready, 10% delayed an hour.
func fillMany(tb testing.TB, h *harness, n int) {
	tb.Helper()
	q := h.queue()
	jobs := make([]quick.NewJob, 0, n)
	for i := range n {
		j := quick.NewJob{TaskType: "email", Payload: []byte(`{"to":"someone@example.com"}`), Priority: quick.Priority(1 + i%3)}
		if i%10 == 0 {
			j.Delay = time.Hour
		}
		jobs = append(jobs, j)
	}
	if _, err := q.Enqueue(context.Background(), jobs...); err != nil {
		tb.Fatal(err)
	}
	h.clk.Advance(time.Second)
}

// lanesCost runs `quick lanes` on a counted database and returns the
// operations of that run alone.
func lanesCost(tb testing.TB, h *harness, args ...string) (kv.Stats, string) {
	tb.Helper()
	counted := kv.WithCounters(h.db)
	d, out, errb := h.deps("")
	d.DB = counted
	r := runApp(d, out, errb, append([]string{"lanes"}, args...)...)
	if r.err != nil {
		tb.Fatalf("lanes: %v", r.err)
	}
	return counted.Stats(), r.stdout
}

// TestLanesCost checks the cost docs/cli.md states: one range read per lane
// and priority (16 × 3) plus one for the task types (or, with --type, one
// point read per type named, to refuse an unknown one), and at most
// budget + 1 keys per range (LaneCounts reads one past the budget to know
// the count is cut).
func TestLanesCost(t *testing.T) {
	h := newHarness(t)
	fillMany(t, h, 3000)
	for _, budget := range []int{10, 1000} {
		st, out := lanesCost(t, h, "--type", "email", "--budget", fmt.Sprint(budget))
		// quick.Open reads the configuration, and --type is checked
		// against the task type registry: two point reads.
		if st.RangeReads != 48 || st.Reads != 2 {
			t.Errorf("budget %d: %d range reads, %d point reads; want 48 and 2", budget, st.RangeReads, st.Reads)
		}
		if max := int64(48 * (budget + 1)); st.KeysRead > max+2 {
			t.Errorf("budget %d: %d keys read, over %d", budget, st.KeysRead, max)
		}
		exact := budget == 1000
		if strings.Contains(out, "≥") == exact {
			t.Errorf("budget %d: exactness labels wrong:\n%s", budget, out)
		}
	}
	st, _ := lanesCost(t, h) // every type: one more range read for the types
	if st.RangeReads != 49 {
		t.Errorf("all types: %d range reads, want 49", st.RangeReads)
	}
}

// BenchmarkLanes100k measures `quick lanes` on 100,000 jobs in memkv:
//
//	go test ./cmd/quick -run '^$' -bench Lanes100k -benchtime 20x
func BenchmarkLanes100k(b *testing.B) {
	for _, budget := range []int{5000, 1000, 100} {
		b.Run(fmt.Sprintf("budget=%d", budget), func(b *testing.B) {
			h := newHarness(b)
			fillMany(b, h, 100_000)
			counted := kv.WithCounters(h.db)
			b.ResetTimer()
			for range b.N {
				var out, errb bytes.Buffer
				d, _, _ := h.deps("")
				d.DB, d.Stdout, d.Stderr = counted, &out, &errb
				if r := runApp(d, &out, &errb, "lanes", "--budget", fmt.Sprint(budget)); r.err != nil {
					b.Fatal(r.err)
				}
			}
			b.StopTimer()
			st := counted.Stats()
			n := float64(b.N)
			b.ReportMetric(float64(st.RangeReads)/n, "range-reads/op")
			b.ReportMetric(float64(st.Reads)/n, "point-reads/op")
			b.ReportMetric(float64(st.KeysRead)/n, "keys-read/op")
			b.ReportMetric(float64(st.BytesRead)/n, "bytes-read/op")
		})
	}
}
