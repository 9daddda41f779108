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

// TestLanesCost checks the cost docs/cli.md states for a zone's lanes:
// beside opening the queue and checking --type, the zone's meta (a point
// read) and lane states (a range read), then per lane state its pointer (a
// point read) and its keys (a range read), about 10,000 keys in all. fillMany's 3,000 jobs sit in the no-tenant zone's
// one lane, at three priorities: three lane states.
func TestLanesCost(t *testing.T) {
	h := newHarness(t)
	fillMany(t, h, 3000)
	// An empty zone costs what opening the queue, checking --type and
	// reading the zone's meta and lane states cost; each lane state adds
	// a point read and a range read.
	base, _ := lanesCost(t, h, "--type", "email", "--tenant", "nobody")
	st, out := lanesCost(t, h, "--type", "email", "--tenant", "")
	if d := st.Sub(base); d.RangeReads != 3 || d.Reads != 3 {
		t.Errorf("%d range reads, %d point reads more than an empty zone; want 3 and 3 (three lane states)", d.RangeReads, d.Reads)
	}
	if st.KeysRead > 10_000+10 {
		t.Errorf("%d keys read, over the zone's budget", st.KeysRead)
	}
	if strings.Contains(out, "≥") || !strings.Contains(out, "ready 2700") {
		t.Errorf("3,000 jobs, within the budget, are not counted exactly:\n%s", out)
	}
}

// BenchmarkLanes100k measures `quick lanes` on a zone of 100,000 jobs in
// memkv, in one lane and in 16:
//
//	go test ./cmd/quick -run '^$' -bench Lanes100k -benchtime 20x
func BenchmarkLanes100k(b *testing.B) {
	for _, lanes := range []int{1, 16} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			h := newHarness(b)
			if err := h.queue().SetZoneLanes(context.Background(), "email", "", lanes); err != nil {
				b.Fatal(err)
			}
			fillMany(b, h, 100_000)
			counted := kv.WithCounters(h.db)
			b.ResetTimer()
			for range b.N {
				var out, errb bytes.Buffer
				d, _, _ := h.deps("")
				d.DB, d.Stdout, d.Stderr = counted, &out, &errb
				if r := runApp(d, &out, &errb, "lanes", "--type", "email", "--tenant", ""); r.err != nil {
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
