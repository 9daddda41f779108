package quick_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// BenchmarkZoneJobCostLimits is BenchmarkZoneJobCost's per-job-lease life
// (enqueue, claim, complete; a 100-byte payload, time moving a millisecond
// a batch) under tenant limits:
//
//	off          no limits anywhere (BenchmarkZoneJobCost's mode=lease)
//	other        another tenant of the task type has a concurrency limit;
//	             the jobs' tenant has none
//	weight       the jobs' tenant has a weight (3) and no other limit
//	concurrency  the jobs' tenant has a concurrency limit (never reached)
//	rate         the jobs' tenant has a rate limit (never reached)
//	both         concurrency and rate
//
// Run it with
//
//	go test -run '^$' -bench ZoneJobCostLimits -benchtime 200x -benchmem ./quick/
func BenchmarkZoneJobCostLimits(b *testing.B) {
	for _, mode := range []string{"off", "other", "weight", "concurrency", "rate", "both"} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("limits=%s/batch=%d", mode, batch), func(b *testing.B) {
				e := newEnv(b, quick.Options{})
				var lim quick.Limits
				tenant := "t"
				switch mode {
				case "other":
					tenant, lim = "other", quick.Limits{Concurrency: 5}
				case "weight":
					lim = quick.Limits{Weight: 3}
				case "concurrency":
					lim = quick.Limits{Concurrency: 1_000_000}
				case "rate":
					lim = quick.Limits{Rate: 1_000_000, Burst: 1_000_000}
				case "both":
					lim = quick.Limits{Concurrency: 1_000_000, Rate: 1_000_000, Burst: 1_000_000}
				}
				if !lim.IsZero() {
					if err := e.q.SetTenantLimits(e.ctx, "email", tenant, lim); err != nil {
						b.Fatal(err)
					}
				}
				payload := make([]byte, 100)
				jobs := make([]quick.NewJob, batch)
				var st kv.Stats
				done := 0
				for b.Loop() {
					e.clk.Advance(time.Millisecond)
					for i := range jobs {
						jobs[i] = quick.NewJob{TaskType: "email", ItemSpace: "t", Payload: payload}
					}
					s0 := e.db.Stats()
					e.enqueue(b, jobs...)
					res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: batch})
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
					st = st.Add(e.db.Stats().Sub(s0))
					done += len(res.Jobs)
				}
				if done != b.N*batch {
					b.Fatalf("ran %d jobs, want %d", done, b.N*batch)
				}
				reportPerJob(b, st, done)
			})
		}
	}
}
