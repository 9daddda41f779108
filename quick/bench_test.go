package quick_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// BenchmarkZoneJobLife measures what the zones layout spends to enqueue
// and claim one job with a 100-byte payload, alone and in batches of 100
// (one enqueue and one claim transaction for 100 jobs). Completing it is
// one clear more (the zones-lease branch's Ack), not counted here.
//
//	go test -run '^$' -bench 'BenchmarkZoneJobLife' -benchtime 2000x ./quick/
func BenchmarkZoneJobLife(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e := zonesEnv(b, quick.Options{})
			payload := make([]byte, 100)
			jobs := make([]quick.NewJob, batch)
			e.enqueue(b, quick.NewJob{TaskType: "email"}) // registers the type
			if c := e.zclaim(b, quick.ClaimOptions{}); len(c.Jobs) != 1 {
				b.Fatal("warm-up claim took nothing")
			}
			before := e.db.Stats()
			start := time.Now()
			done := 0
			for b.Loop() {
				for i := range jobs {
					jobs[i] = quick.NewJob{TaskType: "email", Payload: payload}
				}
				e.enqueue(b, jobs...)
				res := e.zclaim(b, quick.ClaimOptions{Max: batch})
				done += len(res.Jobs)
			}
			if done != b.N*batch {
				b.Fatalf("claimed %d jobs, want %d", done, b.N*batch)
			}
			b.ReportMetric(float64(done)/time.Since(start).Seconds(), "jobs/s")
			reportPerJob(b, e.db.Stats().Sub(before), done)
		})
	}
}

// BenchmarkZoneClaimBacklog measures the keys a claim reads per job it
// takes under a 20k-job backlog of one task type (one zone of 1 or 16
// lanes), Max 16.
//
//	go test -run '^$' -bench 'BenchmarkZoneClaimBacklog' -benchtime 400x ./quick/
func BenchmarkZoneClaimBacklog(b *testing.B) {
	const backlog = 20_000
	for _, c := range []struct {
		name  string
		lanes int
	}{
		{"zones/1", 1},
		{"zones/16", 16},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b, quick.Options{ZoneLanes: c.lanes, MaxZoneLanes: c.lanes})
			fill := func() {
				for range backlog / 1000 {
					jobs := make([]quick.NewJob, 1000)
					for i := range jobs {
						jobs[i] = quick.NewJob{TaskType: "email", Payload: make([]byte, 100)}
					}
					e.enqueue(b, jobs...)
				}
			}
			fill()
			var took int
			var st = e.db.Stats().Sub(e.db.Stats())
			for b.Loop() {
				before := e.db.Stats()
				n := len(e.zclaim(b, quick.ClaimOptions{Max: 16}).Jobs)
				st = st.Add(e.db.Stats().Sub(before))
				took += n
				if n < 16 {
					b.StopTimer()
					fill()
					b.StartTimer()
				}
			}
			p := st.Per(int64(took))
			b.ReportMetric(p.KeysRead, "keysread/job")
			b.ReportMetric(p.Reads+p.RangeReads, "reads/job")
			b.ReportMetric(p.Mutations, "mutations/job")
			b.ReportMetric(p.BytesWritten, "byteswritten/job")
		})
	}
}

// reportPerJob reports what st cost per job.
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
