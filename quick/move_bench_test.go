package quick_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// BenchmarkMoveTenant moves a tenant with N jobs (QUICK_MOVE_JOBS,
// default 100,000) from one memkv database to another while 16 workers
// claim and complete jobs from both queues, and reports the jobs lost (0),
// completed, run twice (only jobs leased when the move fenced the tenant
// may be) and the move's time. Leases are MinLease (10 s): a job leased at
// the fence runs again at the destination once its lease's deadline
// passes, so the run lasts at least that.
//
//	go test -run '^$' -bench BenchmarkMoveTenant -benchtime 1x ./quick/
func BenchmarkMoveTenant(b *testing.B) {
	n := moveJobs(b)
	for range b.N {
		a, bdb := memkv.Open(memkv.Options{}), memkv.Open(memkv.Options{})
		r := runMoveUnderLoad(b, a, bdb, tuple.FromTuple(tuple.Tuple{"bench"}), tuple.FromTuple(tuple.Tuple{"bench"}), n, 16)
		a.Close()
		bdb.Close()
		r.report(b)
	}
}

// moveJobs is the tenant's job count: QUICK_MOVE_JOBS, default 100,000.
func moveJobs(b *testing.B) int {
	s := os.Getenv("QUICK_MOVE_JOBS")
	if s == "" {
		return 100_000
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("QUICK_MOVE_JOBS: %v", err)
	}
	return n
}

func (r moveLoad) report(b *testing.B) {
	b.ReportMetric(float64(r.lost), "lost")
	b.ReportMetric(float64(r.completed), "completed")
	b.ReportMetric(float64(r.twice), "run-twice")
	b.ReportMetric(r.move.Seconds(), "move-s")
	b.ReportMetric(r.drain.Seconds(), "all-done-s")
	b.ReportMetric(float64(r.errs), "worker-retries")
}

type moveLoad struct {
	lost, completed, twice int
	errs                   int // claims and acks that failed (timeouts) and were tried again
	move, drain            time.Duration
}

// runMoveUnderLoad runs the move of BenchmarkMoveTenant from the queue in
// a (under sa) to the queue in bdb (under sb).
func runMoveUnderLoad(b *testing.B, a, bdb kv.Database, sa, sb tuple.Subspace, n, workers int) moveLoad {
	ctx := context.Background()
	src, err := quick.Open(ctx, a, sa, quick.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dst, err := quick.Open(ctx, bdb, sb, quick.Options{})
	if err != nil {
		b.Fatal(err)
	}
	index := map[quick.ID]int{}
	for i := 0; i < n; i += 1000 {
		js := make([]quick.NewJob, 0, 1000)
		for range min(1000, n-i) {
			js = append(js, quick.NewJob{TaskType: "email", ItemSpace: "acme", Payload: []byte("hello")})
		}
		res, err := src.Enqueue(ctx, js...)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range res {
			index[e.ID] = len(index)
		}
	}
	runs := make([]atomic.Int32, n)
	done := make([]atomic.Bool, n)
	var completed, errs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := "w" + strconv.Itoa(w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				took := 0
				for _, q := range []*quick.Queue{src, dst} {
					res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: holder, Max: 16, Lease: quick.MinLease})
					if err != nil {
						// A claim timed out on the loaded machine: a
						// worker tries again.
						errs.Add(1)
						continue
					}
					for _, l := range res.Jobs {
						took++
						i := index[l.ID]
						runs[i].Add(1)
						err := q.Complete(ctx, l)
						for try := 0; err != nil && !errors.Is(err, quick.ErrLeaseLost) && try < 5; try++ {
							errs.Add(1)
							err = q.Complete(ctx, l)
						}
						switch {
						case err == nil:
							if !done[i].Swap(true) {
								completed.Add(1)
							}
						case !errors.Is(err, quick.ErrLeaseLost):
							b.Error(err)
							return
						}
					}
				}
				if took == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	// The workers have a head start on the source.
	for completed.Load() < int64(n/20) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if _, err := src.MoveTenant(ctx, "acme", dst, quick.MoveOptions{TaskType: "email"}); err != nil {
		b.Fatal(err)
	}
	moved := time.Since(start)
	deadline := time.Now().Add(2 * time.Minute)
	for completed.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	r := moveLoad{move: moved, drain: time.Since(start), completed: int(completed.Load()), errs: int(errs.Load())}
	r.lost = n - r.completed
	for i := range runs {
		if runs[i].Load() > 1 {
			r.twice++
		}
	}
	return r
}
