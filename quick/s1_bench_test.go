package quick_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
)

// reportPerJob reports kv operations per job as benchmark metrics: the
// figures docs/design.md quotes.
func reportPerJob(b *testing.B, st kv.Stats, jobs int) {
	p := st.Per(int64(jobs))
	b.ReportMetric(p.ReadVersions, "grv/job")
	b.ReportMetric(p.Reads, "reads/job")
	b.ReportMetric(p.RangeReads, "rangereads/job")
	b.ReportMetric(p.KeysRead, "keysread/job")
	b.ReportMetric(p.Mutations, "mutations/job")
	b.ReportMetric(p.BytesWritten, "byteswritten/job")
	b.ReportMetric(p.Commits, "commits/job")
}

// BenchmarkJobLife measures one job's whole life: enqueue, claim, complete,
// alone and in batches of 100 (one enqueue, one claim and one ack
// transaction for 100 jobs), with a 100-byte payload, 16 lanes.
func BenchmarkJobLife(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e := newEnv(b, quick.Options{})
			payload := make([]byte, 100)
			jobs := make([]quick.NewJob, batch)
			before := e.db.Stats()
			start := time.Now()
			done := 0
			for b.Loop() {
				for i := range jobs {
					jobs[i] = quick.NewJob{TaskType: "email", Payload: payload}
				}
				e.enqueue(b, jobs...)
				res, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: batch, ScanLimit: batch})
				if err != nil {
					b.Fatal(err)
				}
				acks := make([]quick.Ack, len(res.Jobs))
				for i, l := range res.Jobs {
					acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
				}
				if _, err := e.q.Ack(e.ctx, acks...); err != nil {
					b.Fatal(err)
				}
				done += len(res.Jobs)
			}
			if done != b.N*batch {
				b.Fatalf("ran %d jobs, want %d", done, b.N*batch)
			}
			b.ReportMetric(float64(done)/time.Since(start).Seconds(), "jobs/s")
			reportPerJob(b, e.db.Stats().Sub(before), done)
		})
	}
}

// BenchmarkClaimConflicts runs concurrent claimers against a backlog on
// memkv with FDB's published latencies injected (without them conflicts are
// near zero and the figure means nothing), and reports the share of claim
// and ack commits that conflicted. "lanes" gives each claimer its lanes by
// rendezvous hashing, as workers do; "all-lanes" has every claimer scan every
// lane (QuiCK without lanes).
func BenchmarkClaimConflicts(b *testing.B) {
	for _, mode := range []string{"lanes", "all-lanes"} {
		for _, claimers := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/claimers=%d", mode, claimers), func(b *testing.B) {
				benchConflicts(b, mode == "lanes", claimers)
			})
		}
	}
}

func benchConflicts(b *testing.B, useLanes bool, claimers int) {
	const backlog = 1000
	raw, space := fdbtest.OpenMem(b, memkv.Options{Latency: memkv.FDBLatency(), Seed: 1})
	db := kv.WithCounters(raw)
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	q, err := quick.Open(ctx, db, space, quick.Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, claimers)
	for i := range names {
		names[i] = fmt.Sprintf("worker-%d", i)
	}
	var total kv.Stats
	var elapsed time.Duration
	jobs := 0
	for b.Loop() {
		b.StopTimer()
		batch := make([]quick.NewJob, backlog)
		for i := range batch {
			batch[i] = quick.NewJob{TaskType: "email", Payload: make([]byte, 100)}
		}
		if _, err := q.Enqueue(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := db.Stats()
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		ran := 0
		for _, name := range names {
			var mine []int
			if useLanes {
				mine = lanes.Assign(q.Lanes(), names, name, 1)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for idle := 0; idle < 3; {
					res, err := q.Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: name, Lanes: mine, Max: 8})
					if err != nil {
						b.Error(err)
						return
					}
					if len(res.Jobs) == 0 {
						idle++
						continue
					}
					idle = 0
					acks := make([]quick.Ack, len(res.Jobs))
					for i, l := range res.Jobs {
						acks[i] = quick.Ack{Lease: l, Kind: quick.AckComplete}
					}
					if _, err := q.Ack(ctx, acks...); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					ran += len(res.Jobs)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
		d := db.Stats().Sub(before)
		total = total.Add(d)
		if ran != backlog {
			b.Fatalf("ran %d of %d jobs", ran, backlog)
		}
		jobs += ran
	}
	b.ReportMetric(float64(total.Conflicts)/float64(max(total.Commits, 1)), "conflicts/commit")
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	reportPerJob(b, total, jobs)
}
