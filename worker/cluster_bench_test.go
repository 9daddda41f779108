package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// BenchmarkGroupClusterOutage is TestGroupOneClusterDown on the real
// clock: two memkv clusters served by one Group (Concurrency 16, handlers
// of 50 ms), both saturated for 5 s, then east unavailable for 30 s (its
// commits hang until their contexts end), then 5 s more. It reports west's
// jobs started a second before, during (the mean and the worst second) and
// after, and east's during and after. Run once (-benchtime 1x); it takes
// about 50 s. docs/performance.md quotes it.
func BenchmarkGroupClusterOutage(b *testing.B) {
	const (
		conc   = 16
		runFor = 50 * time.Millisecond
		outage = 30 * time.Second
	)
	for range b.N {
		var starts [2]atomic.Int64
		var clusters []Cluster
		var outages [2]*outageDB
		for i, name := range []string{"east", "west"} {
			raw, space := fdbtest.OpenMem(b, memkv.Options{})
			outages[i] = &outageDB{Database: raw}
			q, err := quick.Open(context.Background(), kv.WithCounters(outages[i]), space, quick.Options{Logger: testLogger()})
			if err != nil {
				b.Fatal(err)
			}
			backlog := []int{6000, 16000}[i]
			for n := 0; n < backlog; n += 500 {
				jobs := make([]quick.NewJob, 500)
				for k := range jobs {
					jobs[k] = quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("tenant-%d", (n+k)%20), Payload: []byte(`{}`)}
				}
				if _, err := q.Enqueue(context.Background(), jobs...); err != nil {
					b.Fatal(err)
				}
			}
			clusters = append(clusters, Cluster{Name: name, Queue: q})
		}
		g, err := NewGroup(GroupConfig{Clusters: clusters, Config: Config{Logger: testLogger(), Clock: clock.Real()}})
		if err != nil {
			b.Fatal(err)
		}
		err = g.Each(func(w *Worker) error {
			i := 0
			if w.Cluster() == "west" {
				i = 1
			}
			return Register(w, func(ctx context.Context, j *Job[emailArgs]) error {
				starts[i].Add(1)
				select {
				case <-time.After(runFor):
				case <-ctx.Done():
				}
				return nil
			}, HandlerOptions{Concurrency: conc})
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		// windows samples the starts each second for d.
		windows := func(d time.Duration) [][2]int64 {
			var out [][2]int64
			last := [2]int64{starts[0].Load(), starts[1].Load()}
			for t := time.Duration(0); t < d; t += time.Second {
				time.Sleep(time.Second)
				now := [2]int64{starts[0].Load(), starts[1].Load()}
				out = append(out, [2]int64{now[0] - last[0], now[1] - last[1]})
				last = now
			}
			return out
		}
		windows(6 * time.Second) // warm-up: the first clock rounds, then both saturated
		before := windows(5 * time.Second)
		outages[0].setDown(true, false)
		during := windows(outage)
		outages[0].setDown(false, false)
		after := windows(5 * time.Second)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		mean := func(ws [][2]int64, i int) float64 { return float64(sumWindows(ws, i)) / float64(len(ws)) }
		worst := during[0][1]
		for _, w := range during {
			worst = min(worst, w[1])
		}
		b.ReportMetric(mean(before, 1), "west-before/s")
		b.ReportMetric(mean(during, 1), "west-during/s")
		b.ReportMetric(float64(worst), "west-worst-second")
		b.ReportMetric(mean(after, 1), "west-after/s")
		b.ReportMetric(mean(before, 0), "east-before/s")
		b.ReportMetric(float64(sumWindows(during[1:], 0)), "east-during-jobs")
		b.ReportMetric(mean(after, 0), "east-after/s")
		b.Logf("west per second before %v, during %v, after %v; east during %v, after %v",
			column(before, 1), column(during, 1), column(after, 1), column(during, 0), column(after, 0))
	}
}
