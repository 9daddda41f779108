package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Result is one variant at one worker count in one mode.
type Result struct {
	Variant    string  `json:"variant"`
	Mode       Mode    `json:"mode"`
	Workers    int     `json:"workers"`
	Rep        int     `json:"rep"` // 1-based repetition of the cell
	Elapsed    float64 `json:"elapsed_s"`
	Enqueued   int64   `json:"enqueued"`
	Completed  int64   `json:"completed"`
	JobsPerSec float64 `json:"jobs_per_s"`
	// EnqueueToStart covers the first start of jobs enqueued without delay
	// (in backlog mode, from the moment the workers started).
	EnqueueToStart Percentiles `json:"enqueue_to_start"`
	// VestToStart covers every start, from when the job vested.
	VestToStart Percentiles `json:"vest_to_start"`
	// LongestWait is the longest vested-to-start wait of any job, counting
	// jobs still waiting when the run ended.
	LongestWaitMs float64 `json:"longest_wait_ms"`
	// Unstarted counts vested jobs still waiting when the run ended.
	Unstarted      int64      `json:"unstarted"`
	ClaimCommits   int64      `json:"claim_commits"`
	ClaimConflicts int64      `json:"claim_conflicts"`
	ConflictRate   float64    `json:"conflict_rate"` // conflicts per claim commit
	PerJob         kv.PerUnit `json:"per_job"`       // enqueue + claim + ack, per completed job
	Enqueue        kv.Stats   `json:"enqueue_stats"`
	Claim          kv.Stats   `json:"claim_stats"`
	Ack            kv.Stats   `json:"ack_stats"`
	Errors         int64      `json:"errors"`
	FirstError     string     `json:"first_error,omitempty"`
	// BySpace holds vested-to-start waits per item space (fairness runs).
	BySpace    map[string]Percentiles `json:"by_space,omitempty"`
	Violations []string               `json:"violations,omitempty"`
}

// run is one Result in the making.
type run struct {
	e         *env
	st        strategy
	mode      Mode
	workers   int
	fair      *fairSpec
	target    int64 // backlog mode: logical jobs to finish
	completed atomic.Int64
	enqueued  atomic.Int64
	errors    atomic.Int64
	errMu     sync.Mutex
	firstErr  string
	drained   chan struct{}
	drainOnce sync.Once
}

// RunOne runs one variant at one worker count in one mode.
func RunOne(ctx context.Context, eng Engine, cfg Config, variant string, workers int, mode Mode) (Result, error) {
	return runOne(ctx, eng, cfg, variant, workers, mode, nil)
}

func runOne(ctx context.Context, eng Engine, cfg Config, variant string, workers int, mode Mode, fair *fairSpec) (Result, error) {
	st, err := strategyFor(variant)
	if err != nil {
		return Result{}, err
	}
	db, space, closeDB, err := eng.open()
	if err != nil {
		return Result{}, err
	}
	defer closeDB()
	e, err := openEnv(ctx, db, space, cfg, tuneOptions(st))
	if err != nil {
		return Result{}, err
	}
	r := &run{e: e, st: st, mode: mode, workers: workers, fair: fair, drained: make(chan struct{})}
	runLen := cfg.RunLength
	if fair != nil {
		runLen = fair.run
	}

	if mode == Backlog {
		if err := r.preload(ctx); err != nil {
			return Result{}, err
		}
	}
	enqBefore, claimBefore, ackBefore := e.enqDB.Stats(), e.claimDB.Stats(), e.ackDB.Stats()

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	if mode == Backlog {
		// The backlog waits from the moment the workers start.
		e.metas.Range(func(_, v any) bool {
			m := v.(*jobMeta)
			m.enq = start
			if m.vest.Load() < start.UnixNano() {
				m.vest.Store(start.UnixNano())
			}
			return true
		})
	}
	e.waits.setOpen(true)
	names := make([]string, workers)
	for i := range names {
		names[i] = fmt.Sprintf("w%02d", i)
	}
	for _, name := range names {
		r.startWorker(runCtx, &wg, st.newClaimer(e, name, names))
	}
	if mode == Steady {
		for p := 0; p < cfg.Producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.produce(runCtx, p, start)
			}()
		}
	}
	timer := time.NewTimer(runLen)
	select {
	case <-timer.C:
	case <-r.drained:
	case <-ctx.Done():
	}
	timer.Stop()
	end := time.Now()
	e.waits.setOpen(false)
	done := r.completed.Load()
	enq, claim, ack := e.enqDB.Stats(), e.claimDB.Stats().Sub(claimBefore), e.ackDB.Stats().Sub(ackBefore)
	stop()
	wg.Wait()

	res := Result{Variant: variant, Mode: mode, Workers: workers, Elapsed: end.Sub(start).Seconds(),
		Completed: done, Enqueued: r.enqueued.Load(), Claim: claim, Ack: ack, Errors: r.errors.Load(), FirstError: r.firstErr}
	if mode == Steady {
		enq = enq.Sub(enqBefore)
	}
	res.Enqueue = enq
	res.JobsPerSec = float64(done) / res.Elapsed
	res.ClaimCommits, res.ClaimConflicts = claim.Commits, claim.Conflicts
	if claim.Commits > 0 {
		res.ConflictRate = float64(claim.Conflicts) / float64(claim.Commits)
	}
	res.PerJob = addPer(enq.Per(max(res.Enqueued, 1)), claim.Add(ack).Per(max(done, 1)))
	e.waits.mu.Lock()
	res.EnqueueToStart = summarise(e.waits.enqToSt)
	res.VestToStart = summarise(e.waits.vestToS)
	if fair != nil {
		res.BySpace = map[string]Percentiles{}
		for s, ds := range e.waits.bySpace {
			res.BySpace[s] = summarise(ds)
		}
	}
	e.waits.mu.Unlock()
	res.LongestWaitMs = res.VestToStart.Max
	e.metas.Range(func(_, v any) bool {
		m := v.(*jobMeta)
		if m.starts.Load() == 0 && m.vest.Load() < end.UnixNano() {
			res.Unstarted++
			res.LongestWaitMs = max(res.LongestWaitMs, ms(end.Sub(time.Unix(0, m.vest.Load()))))
		}
		allowed := int32(1)
		if m.fail {
			allowed = 2
		}
		if n := m.starts.Load(); n > allowed {
			e.violate(fmt.Sprintf("a job started %d times with %d attempts planned and no lease lapsed", n, allowed))
		}
		return true
	})
	e.violMu.Lock()
	res.Violations = append(res.Violations, e.violations...)
	e.violMu.Unlock()
	return res, nil
}

func addPer(a, b kv.PerUnit) kv.PerUnit {
	return kv.PerUnit{
		ReadVersions: a.ReadVersions + b.ReadVersions, Reads: a.Reads + b.Reads, RangeReads: a.RangeReads + b.RangeReads,
		KeysRead: a.KeysRead + b.KeysRead, BytesRead: a.BytesRead + b.BytesRead, Mutations: a.Mutations + b.Mutations,
		BytesWritten: a.BytesWritten + b.BytesWritten, Commits: a.Commits + b.Commits, Conflicts: a.Conflicts + b.Conflicts,
		Watches: a.Watches + b.Watches,
	}
}

func (r *run) fail(err error) {
	r.errors.Add(1)
	r.errMu.Lock()
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.errMu.Unlock()
}

// preload enqueues the backlog before the workers start.
func (r *run) preload(ctx context.Context) error {
	cfg := r.e.cfg
	w := newWorkload(cfg, 0, r.fair)
	payload := make([]byte, cfg.Payload)
	const batch = 500
	for done := 0; done < cfg.Backlog; done += batch {
		n := min(batch, cfg.Backlog-done)
		jobs := make([]quickJob, 0, n)
		now := time.Now()
		for range n {
			nj, m := w.next(now, payload)
			r.e.metas.Store(nj.ID, m)
			jobs = append(jobs, nj)
		}
		if _, err := r.e.qEnq.Enqueue(ctx, jobs...); err != nil {
			return fmt.Errorf("bench: preload: %w", err)
		}
		r.enqueued.Add(int64(n))
	}
	r.target = int64(cfg.Backlog)
	return nil
}

// produce enqueues this producer's share of the arrival rate, catching up
// in one transaction when it falls behind.
func (r *run) produce(ctx context.Context, p int, start time.Time) {
	cfg := r.e.cfg
	rate := cfg.Rate
	if r.fair != nil {
		rate = r.fair.rate
	}
	if rate <= 0 {
		return
	}
	per := time.Duration(float64(time.Second) * float64(cfg.Producers) / rate)
	offset := per * time.Duration(p) / time.Duration(cfg.Producers)
	w := newWorkload(cfg, uint64(p+1), r.fair)
	payload := make([]byte, cfg.Payload)
	sent := 0
	for ctx.Err() == nil {
		due := int(time.Since(start.Add(offset))/per) + 1 - sent
		if due <= 0 {
			sleep(ctx, time.Until(start.Add(offset+per*time.Duration(sent))))
			continue
		}
		due = min(due, 200)
		now := time.Now()
		jobs := make([]quickJob, due)
		for i := range jobs {
			nj, m := w.next(now, payload)
			r.e.metas.Store(nj.ID, m)
			jobs[i] = nj
		}
		if _, err := r.e.qEnq.Enqueue(ctx, jobs...); err != nil {
			if ctx.Err() == nil {
				r.fail(err)
			}
			return
		}
		sent += due
		r.enqueued.Add(int64(due))
	}
}

// startWorker runs one worker: its claim loop (or one loop per slot) and,
// when the strategy batches acks, its acker.
func (r *run) startWorker(ctx context.Context, wg *sync.WaitGroup, c claimer) {
	slots := r.e.cfg.Concurrency
	if r.st.perSlot() {
		for range slots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.slotLoop(ctx, c)
			}()
		}
		return
	}
	var acks chan ackReq
	if r.st.batchAcks() {
		acks = make(chan ackReq, 2*slots)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.acker(ctx, c, acks)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.claimLoop(ctx, wg, c, slots, acks)
	}()
}

// slotLoop is the recipe's consumer: dequeue one, run it, acknowledge it.
func (r *run) slotLoop(ctx context.Context, c claimer) {
	for ctx.Err() == nil {
		jobs, next, err := c.claim(ctx, 1)
		if err != nil {
			if ctx.Err() == nil {
				r.fail(err)
				sleep(ctx, r.e.cfg.Poll)
			}
			continue
		}
		if len(jobs) == 0 {
			r.idle(ctx, next)
			continue
		}
		for _, j := range jobs {
			if fail, ok := r.handle(ctx, j); ok {
				r.ackAndCount(ctx, c, []ackReq{{j: j, fail: fail}})
			}
		}
	}
}

// claimLoop claims as many jobs as there are free slots and runs each in
// its own goroutine.
func (r *run) claimLoop(ctx context.Context, wg *sync.WaitGroup, c claimer, slots int, acks chan ackReq) {
	sem := make(chan struct{}, slots)
	for ctx.Err() == nil {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1
	more:
		for free < slots {
			select {
			case sem <- struct{}{}:
				free++
			default:
				break more
			}
		}
		jobs, next, err := c.claim(ctx, free)
		for range free - len(jobs) {
			<-sem
		}
		if err != nil {
			if ctx.Err() == nil {
				r.fail(err)
				sleep(ctx, r.e.cfg.Poll)
			}
			continue
		}
		if len(jobs) == 0 {
			r.idle(ctx, next)
			continue
		}
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fail, ok := r.handle(ctx, j)
				<-sem
				if !ok {
					return
				}
				if acks != nil {
					select {
					case acks <- ackReq{j: j, fail: fail}:
					case <-ctx.Done():
					}
					return
				}
				r.ackAndCount(ctx, c, []ackReq{{j: j, fail: fail}})
			}()
		}
	}
}

// acker acknowledges finished jobs in batches of whatever is ready: no job
// waits for a batch to fill.
func (r *run) acker(ctx context.Context, c claimer, in chan ackReq) {
	for {
		var batch []ackReq
		select {
		case a := <-in:
			batch = append(batch, a)
		case <-ctx.Done():
			return
		}
	drain:
		for len(batch) < 500 {
			select {
			case a := <-in:
				batch = append(batch, a)
			default:
				break drain
			}
		}
		r.ackAndCount(ctx, c, batch)
	}
}

func (r *run) ackAndCount(ctx context.Context, c claimer, reqs []ackReq) {
	lost, err := c.ack(ctx, reqs)
	if err != nil {
		if ctx.Err() == nil {
			r.fail(err)
		}
		return
	}
	if lost > 0 {
		r.e.violate(fmt.Sprintf("%d acks found their lease lost though no lease can lapse in a run", lost))
	}
	for _, a := range reqs {
		if a.fail {
			continue
		}
		m := r.e.meta(a.j.id)
		if m == nil {
			continue
		}
		if !m.shared && m.done.Add(1) > 1 {
			r.e.violate(fmt.Sprintf("job %s completed twice", a.j.id))
			continue
		}
		if n := r.completed.Add(1); r.target > 0 && n >= r.target {
			r.drainOnce.Do(func() { close(r.drained) })
		}
	}
}

// handle runs a job's handler: it sleeps the job's duration and fails the
// first attempt of the jobs drawn to fail. ok is false when the run ended.
func (r *run) handle(ctx context.Context, j job) (fail, ok bool) {
	m := r.e.meta(j.id)
	if m == nil {
		r.e.violate(fmt.Sprintf("claimed job %s, which the harness never enqueued", j.id))
		return false, false
	}
	start := time.Now()
	first := m.starts.Add(1) == 1
	r.e.waits.add(m, start, first)
	if !sleep(ctx, m.dur) {
		return false, false
	}
	if m.fail && m.failed.CompareAndSwap(false, true) {
		m.vest.Store(time.Now().Add(r.e.cfg.RetryDelay).UnixNano())
		return true, true
	}
	return false, true
}

// idle waits before the next claim: until the next job vests, at most the
// poll interval, with jitter so idle workers do not claim in lockstep.
func (r *run) idle(ctx context.Context, next time.Time) {
	d := r.e.cfg.Poll/2 + time.Duration(rand.Int64N(int64(r.e.cfg.Poll)+1))
	if !next.IsZero() {
		d = min(d, max(time.Until(next), time.Millisecond))
	}
	sleep(ctx, d)
}

// sleep waits d on the real clock; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
