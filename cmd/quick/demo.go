package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/testhooks"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

func (a *app) demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run a queue of several tenants, workers and a cron schedule in this process on the embedded engine, and watch them",
		Description: "Enqueues a mix of jobs for six tenants, one of them hot (about half the jobs): immediate and\n" +
			"delayed, three priorities, some that fail and retry, some that dead-letter, long ones that\n" +
			"checkpoint, long ones whose lease is renewed. Each tenant's jobs of a task type are its zone;\n" +
			"the hot tenant's zone backs up, grows its lanes and splits its backlog so several workers drain\n" +
			"it at once, while the other tenants' jobs still start at once. It registers a cron schedule, runs\n" +
			"--workers workers, kills one mid-run (no cleanup: its jobs come back when their 10 s leases\n" +
			"lapse, the queue's minimum) and shows the task types, their top tenants and the hot zone's lanes\n" +
			"live until the work drains or --duration passes. While no job is ready to run, the demo's clock\n" +
			"(leases, delays, heartbeats and job times alike) runs --fast-forward times faster, so waiting for\n" +
			"a lease to lapse takes 2 s, not 10.\n" +
			"It always uses the embedded engine (memkv), whatever the connection flags say, and saves its queue\n" +
			"in --save FILE every second and at the end: quick --snapshot FILE stats (or any other command)\n" +
			"then shows it from another terminal, during the run or after it.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "jobs", Aliases: []string{"n"}, Value: 200, Usage: "jobs to enqueue"},
			&cli.IntFlag{Name: "workers", Aliases: []string{"w"}, Value: 3, Usage: "workers to run"},
			&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Value: 45 * time.Second, Usage: "hard bound on the run"},
			&cli.Float64Flag{Name: "speed", Value: 1, Usage: "time scale: 2 halves job durations, delays and backoffs (leases stay 10 s)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the job mix"},
			&cli.BoolFlag{Name: "kill", Value: true, Usage: "kill one worker mid-run (--kill=false to keep them all)"},
			&cli.Float64Flag{Name: "fast-forward", Value: 5, Usage: "while no job is ready, run the demo's clock this many times faster (1: never)"},
			&cli.BoolFlag{Name: "verbose", Usage: "log the workers' and queue's info messages to stderr"},
			&cli.StringFlag{Name: "save", Value: a.d.DemoSnapshot,
				Usage: "save the demo's queue in this file every second and at the end, for other commands' --snapshot (\"\": do not save)"},
			outputFlag(false),
		},
		Action: a.demo,
	}
}

// demoJob is the payload of a demo job: what its handler does.
type demoJob struct {
	N     int    `json:"n"`
	Ms    int    `json:"ms"`              // work time at speed 1 (per step for import)
	Fail  string `json:"fail,omitempty"`  // "", "once" or "always"
	Steps int    `json:"steps,omitempty"` // import: steps, checkpointed
}

// The demo's task types; "tick" is the cron schedule's.
var demoTypes = []string{"email", "webhook", "report", "import", "export"}

// demoExportTime is how long an export job works without a checkpoint,
// whatever --speed says: longer than two thirds of its 10 s lease, so the
// worker's lease keeper renews it.
const demoExportTime = 7500 * time.Millisecond

const (
	demoCronName = "tick"
	demoCronType = "tick"
)

// demoCounts are what the handlers saw, for the live view and the summary.
type demoCounts struct {
	runs, retries, takeovers, resumed, cronRuns, done, dead, failed atomic.Int64
	// claimDead counts jobs no handler ended: dead-lettered by a claim
	// because the killed worker spent their last attempt. The view reads it
	// from the queue's dead-letter counters.
	claimDead atomic.Int64

	mu          sync.Mutex
	checkpoints map[string]int64             // worker -> checkpoints written (each extends the lease)
	running     map[string]map[quick.ID]bool // worker -> jobs it runs now
	orphans     map[quick.ID]bool            // jobs the killed worker held
	finished    map[quick.ID]bool            // jobs a handler ended (done counts each once)
	events      []string                     // takeovers, for the main loop to show
}

// finish counts job id as done (and dead) once: a handler that ended a job
// whose lease it had lost (a slow run on a loaded machine) sees the job run
// again, and the bar showed 61/60 done.
func (s *demoCounts) finish(id quick.ID, dead bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished[id] {
		return
	}
	if s.finished == nil {
		s.finished = map[quick.ID]bool{}
	}
	s.finished[id] = true
	s.done.Add(1)
	if dead {
		s.dead.Add(1)
	}
}

// takeEvents returns and forgets the events noted since the last call.
func (s *demoCounts) takeEvents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.events
	s.events = nil
	return ev
}

func (s *demoCounts) start(w string, l quick.Lease) {
	s.runs.Add(1)
	if len(l.Checkpoint) > 0 {
		s.resumed.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.orphans[l.ID] {
		delete(s.orphans, l.ID)
		s.takeovers.Add(1)
		ev := fmt.Sprintf("%s took over %s %s: lease lapsed; attempt %d", w, l.TaskType, shortID(l.ID), l.Attempt)
		if len(l.Checkpoint) > 0 {
			ev += fmt.Sprintf(" from step %s", l.Checkpoint)
		}
		s.events = append(s.events, ev)
	} else if l.Attempt > 1 {
		s.retries.Add(1)
	}
	if s.running[w] == nil {
		s.running[w] = map[quick.ID]bool{}
	}
	s.running[w][l.ID] = true
}

func (s *demoCounts) end(w string, id quick.ID) {
	s.mu.Lock()
	delete(s.running[w], id)
	s.mu.Unlock()
}

func (s *demoCounts) checkpointed(w string) {
	s.mu.Lock()
	s.checkpoints[w]++
	s.mu.Unlock()
}

func (s *demoCounts) checkpointsOf(w string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkpoints[w]
}

// orphaned returns how many of the killed worker's jobs nobody took over
// yet.
func (s *demoCounts) orphaned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orphans)
}

// shortID is the tail of a job ID, enough to tell the demo's jobs apart on
// an 80-column line (a UUIDv7's head is its time, shared by the batch).
func shortID(id quick.ID) string {
	s := id.String()
	return "…" + s[len(s)-8:]
}

// busiest returns the worker running the most jobs now.
func (s *demoCounts) busiest(ids []string) (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, n := "", 0
	for _, id := range ids {
		if len(s.running[id]) > n {
			best, n = id, len(s.running[id])
		}
	}
	return best, n
}

// orphan marks the jobs a worker runs as taken over by whoever runs them next.
func (s *demoCounts) orphan(w string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.running[w] {
		s.orphans[id] = true
	}
	n := len(s.running[w])
	s.running[w] = nil
	return n
}

// demoSummary is the demo's outcome (--output json prints it).
type demoSummary struct {
	Drained       bool             `json:"drained"`
	Interrupted   bool             `json:"interrupted"`
	ElapsedMs     int64            `json:"elapsed_ms"`
	ClockMs       int64            `json:"demo_clock_ms"`
	Jobs          int              `json:"jobs"`
	Delayed       int              `json:"delayed"`
	Completed     int64            `json:"completed"`
	DeadLetters   int64            `json:"dead_letters"`
	Remaining     countRow         `json:"remaining"`
	Tenants       []demoTenantJobs `json:"tenants"`
	ZonesGrown    []zoneGrowth     `json:"zones_grown"`
	Runs          int64            `json:"runs"`
	Retries       int64            `json:"retries"`
	Takeovers     int64            `json:"lease_takeovers"`
	Resumed       int64            `json:"resumed_from_checkpoint"`
	CronRuns      int64            `json:"cron_runs"`
	Killed        string           `json:"killed_worker,omitempty"`
	KilledHolding int              `json:"killed_holding,omitempty"`
	KilledAtMs    int64            `json:"killed_at_ms,omitempty"`
	Stats         kv.Stats         `json:"fdb_operations"`
	PerJob        kv.PerUnit       `json:"fdb_operations_per_job"`
	Workers       []workerStat     `json:"workers"`
	// Snapshot is the file the demo's queue was saved in (--save).
	Snapshot string `json:"snapshot,omitempty"`
}

// workerStat is one worker's counters in the summary, with snake_case
// names like the rest of the CLI's JSON (worker.Stats has no JSON tags).
// A lease is extended two ways: by the worker's lease keeper renewing it
// (lease_renewals, one ExtendMany call per round) and by each checkpoint the
// handler writes (checkpoints).
type workerStat struct {
	ID            string `json:"id"`
	Claimed       int64  `json:"claimed"`
	Completed     int64  `json:"completed"`
	Failed        int64  `json:"failed"`
	DeadLettered  int64  `json:"dead_lettered"`
	LeaseLost     int64  `json:"lease_lost"`
	Conflicts     int64  `json:"conflicts"`
	LeaseRenewals int64  `json:"lease_renewals"`
	Checkpoints   int64  `json:"checkpoints"`
	ClaimBatches  int64  `json:"claim_batches"`
	EmptyClaims   int64  `json:"empty_claims"`
	AckBatches    int64  `json:"ack_batches"`
}

func toWorkerStat(id string, s worker.Stats, checkpoints int64) workerStat {
	return workerStat{ID: id, Claimed: s.Claimed, Completed: s.Completed, Failed: s.Failed, DeadLettered: s.DeadLettered,
		LeaseLost: s.LeaseLost, Conflicts: s.Conflicts, LeaseRenewals: s.Extensions, Checkpoints: checkpoints,
		ClaimBatches: s.ClaimBatches, EmptyClaims: s.EmptyClaims, AckBatches: s.AckBatches}
}

func (a *app) demo(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	nJobs, nWorkers, bound, speed := c.Int("jobs"), c.Int("workers"), c.Duration("duration"), c.Float64("speed")
	ff := c.Float64("fast-forward")
	switch {
	case nJobs < 1 || nJobs > 1_000_000:
		return fmt.Errorf("invalid --jobs %d: want 1 to 1,000,000", nJobs)
	case nWorkers < 1 || nWorkers > 64:
		return fmt.Errorf("invalid --workers %d: want 1 to 64", nWorkers)
	case bound <= 0:
		return fmt.Errorf("invalid --duration %v: want a positive duration", bound)
	case speed <= 0 || speed > 100:
		return fmt.Errorf("invalid --speed %v: want a factor above 0, at most 100", speed)
	case ff < 1 || ff > 20:
		return fmt.Errorf("invalid --fast-forward %v: want a factor from 1 (off) to 20", ff)
	}
	kill := c.Bool("kill") && nWorkers > 1
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }

	// The workers' logger (--verbose), the snapshot saver and the progress
	// lines all write stderr, from their own goroutines: one lock keeps a
	// writer that is not safe for concurrent use (a test's buffer) whole.
	stderr := &lockedWriter{w: a.d.Stderr}
	out, progress := a.d.Stdout, io.Writer(a.d.Stdout)
	if f == formatJSON {
		progress = stderr // JSON gets the summary alone
	}
	tty := f == formatTable && a.d.IsTerminal(out)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if c.Bool("verbose") {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}

	// One embedded database; the workers' and producer's operations are
	// counted, the live view's reads are not. Everything runs on the demo's
	// clock, which fast-forwards while nothing is ready to run.
	clk := newLapseClock()
	// The engine runs on the demo clock too: the workers' clock check reads
	// time through read versions, and versions that kept the wall clock's
	// pace while the demo clock ran ×5 made a worker look skewed by the
	// lapse and stand by.
	mem := memkv.Open(memkv.Options{Seed: int64(c.Uint64("seed")), Clock: clk})
	defer mem.Close()
	counted := kv.WithCounters(mem)
	space := tuple.FromTuple(tuple.Tuple{"demo"})
	qopts := demoQueueOptions(clk, logger, func(attempt int) time.Duration { return scale(time.Duration(attempt) * 300 * time.Millisecond) })
	ctx := c.Context
	q, err := quick.Open(ctx, counted, space, qopts)
	if err != nil {
		return err
	}
	view, err := quick.Open(ctx, mem, space, qopts)
	if err != nil {
		return err
	}
	savePath := c.String("save")
	var saver *snapshotSaver
	if savePath != "" {
		saver = startSnapshotSaver(mem, savePath, "quick demo", "demo", clk, func(err error) {
			fmt.Fprintf(stderr, "quick demo: cannot save the queue for --snapshot (the demo goes on): %v\n", err)
		})
		defer func() {
			if saver != nil {
				saver.Stop()
			}
		}()
	}

	// The job mix.
	rng := rand.New(rand.NewPCG(c.Uint64("seed"), 0x9e3779b97f4a7c15))
	jobs, delayed := demoMix(rng, nJobs, scale)
	every := max(scale(2*time.Second).Round(time.Second), time.Second)
	if err := cron.Register(ctx, q, cron.Schedule{Name: demoCronName, Spec: "@every " + every.String(), TaskType: demoCronType,
		Payload: []byte("rollup"), MissedRuns: cron.SkipAll}); err != nil {
		return fmt.Errorf("register the demo's cron schedule: %w", err)
	}

	// Workers.
	counts := &demoCounts{running: map[string]map[quick.ID]bool{}, orphans: map[quick.ID]bool{}, checkpoints: map[string]int64{}}
	runCtx, stopAll := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAll()
	var ws []*worker.Worker
	var ids []string
	killed := map[string]*atomic.Bool{}
	var wg sync.WaitGroup
	for i := range nWorkers {
		id := fmt.Sprintf("worker-%d", i+1)
		w, err := worker.New(worker.Config{
			Queue: q, ID: id, Logger: logger, HeartbeatPeriod: 500 * time.Millisecond,
			ShutdownTimeout: 2 * time.Second, DefaultConcurrency: 4,
		})
		if err != nil {
			return err
		}
		dead := &atomic.Bool{}
		killed[id] = dead
		for _, t := range demoTypes {
			if err := worker.RegisterRaw(w, t, demoHandler(t, id, counts, dead, scale, clk), worker.HandlerOptions{Lease: quick.MinLease}); err != nil {
				return err
			}
		}
		if err := cron.Handle(w, demoCronType, func(ctx context.Context, occ cron.Occurrence) error {
			if !dead.Load() {
				counts.cronRuns.Add(1)
			}
			return nil
		}, worker.HandlerOptions{Lease: quick.MinLease, Concurrency: 1}); err != nil {
			return err
		}
		ws = append(ws, w)
		ids = append(ids, id)
	}
	start, clockStart := time.Now(), clk.Now()
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		return fmt.Errorf("enqueue the demo's jobs: %w", err)
	}
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(runCtx)
		}()
	}

	// Watch until the work drains, the bound passes or Ctrl-C.
	sum := demoSummary{Jobs: nJobs, Delayed: delayed}
	deadline := start.Add(bound)
	killAt := clockStart.Add(scale(1500 * time.Millisecond))
	frame := 250 * time.Millisecond
	lineEvery := time.Second
	lastLine := start
	var events []string
	// Times shown are the demo clock's, the one leases and delays run on.
	stamp := func() string { return fmt.Sprintf("[%5.1fs] ", clk.Now().Sub(clockStart).Seconds()) }
	event := func(format string, args ...any) {
		msg := stamp() + fmt.Sprintf(format, args...)
		events = append(events, msg)
		if !tty {
			fmt.Fprintln(progress, msg)
		}
	}
	event("enqueued %d jobs (%d delayed) and a cron schedule every %v; %d workers", nJobs, delayed, every, nWorkers)
	if savePath != "" && !tty {
		event("saving the queue in %s every second: quick --snapshot %s stats shows it", savePath, shellQuote(savePath))
	}
	var reps []typeDepth
	var hot zoneReport
	zones := newZoneWatch()
	toldFF := false
	for {
		now := clk.Now()
		reps, err = depthReports(ctx, view, demoTypes, nil, 10_000, 3, now)
		if err == nil {
			hot, err = zoneReportOf(ctx, view, demoHotType, demoHotTenant, now)
		}
		if err != nil {
			if ctx.Err() != nil {
				break // interrupted: summarise what there is
			}
			return err
		}
		sum.Remaining = remaining(reps)
		if g, grew := zones.see(hot); grew {
			event("zone %s/%s grew from %d to %d lanes: more workers drain it at once", g.TaskType, g.ItemSpace, g.From, g.To)
		}
		if err := counts.readClaimDead(ctx, view); err != nil && ctx.Err() == nil {
			return err
		}
		drained := sum.Remaining.Ready+sum.Remaining.Leased+sum.Remaining.Scheduled == 0
		if kill && sum.Killed == "" && now.After(killAt) {
			if id, n := counts.busiest(ids); n > 0 {
				killed[id].Store(true)
				held := counts.orphan(id)
				for i, w := range ws {
					if ids[i] == id {
						testhooks.KillWorker(w)
					}
				}
				sum.Killed, sum.KilledHolding, sum.KilledAtMs = id, held, now.Sub(clockStart).Milliseconds()
				event("killed %s (no cleanup) while it ran %d jobs; their %v leases must lapse before others take them", id, held, quick.MinLease)
			}
		}
		for _, e := range counts.takeEvents() {
			event("%s", e)
		}
		// Fast-forward while nothing is ready: the workers keep up, and
		// what is left is waiting on the clock (leases to lapse, delays to
		// vest, long jobs to finish).
		rate := 1.0
		if sum.Remaining.Ready == 0 && !drained && now.Sub(clockStart) > scale(time.Second) {
			rate = ff
		}
		clk.SetRate(rate)
		if rate > 1 && !toldFF {
			toldFF = true
			event("nothing ready: the demo clock runs ×%g while no job waits for a worker", ff)
		}
		if tty {
			io.WriteString(out, redraw(demoFrame(demoView{
				workers: nWorkers, jobs: nJobs, clock: now.Sub(clockStart), real: time.Since(start), bound: bound,
				rate: rate, reps: reps, hot: hot, counts: counts, left: sum.Remaining, events: events,
			})))
		} else if time.Since(lastLine) >= lineEvery {
			lastLine = time.Now()
			fmt.Fprintf(progress, "%s%s\n", stamp(), progressLine(counts, nJobs, sum.Remaining))
		}
		if drained {
			sum.Drained = true
			if !tty {
				fmt.Fprintf(progress, "%s%s\n", stamp(), progressLine(counts, nJobs, sum.Remaining))
			}
			break
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(frame, time.Until(deadline)+time.Millisecond)):
		}
	}
	elapsed := time.Since(start)
	sum.Interrupted = ctx.Err() != nil && !sum.Drained
	clk.SetRate(1)

	// Stop the workers that are alive, gracefully but bounded.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	for i, w := range ws {
		if !killed[ids[i]].Load() {
			w.Stop(stopCtx)
		}
	}
	cancel()
	stopAll()
	waitTimeout(&wg, 3*time.Second)

	// The outcome, from the database where it can be.
	for _, t := range demoTypes {
		n, err := view.DeadCount(context.WithoutCancel(ctx), t)
		if err == nil {
			sum.DeadLetters += n
		}
	}
	left := sum.Remaining.Ready + sum.Remaining.Leased + sum.Remaining.Scheduled
	sum.Completed = int64(nJobs-left) - sum.DeadLetters
	sum.ElapsedMs = elapsed.Milliseconds()
	sum.ClockMs = clk.Now().Sub(clockStart).Milliseconds()
	sum.Runs, sum.Retries, sum.Takeovers = counts.runs.Load(), counts.retries.Load(), counts.takeovers.Load()
	sum.Resumed, sum.CronRuns = counts.resumed.Load(), counts.cronRuns.Load()
	sum.Stats = counted.Stats()
	sum.Tenants, sum.ZonesGrown = demoTenantsOf(jobs), zones.grown
	finished := sum.Completed + sum.DeadLetters + sum.CronRuns
	sum.PerJob = sum.Stats.Per(finished)
	for i, w := range ws {
		sum.Workers = append(sum.Workers, toWorkerStat(ids[i], w.Stats(), counts.checkpointsOf(ids[i])))
	}
	if saver != nil {
		err := saver.Stop()
		saver = nil
		if err != nil {
			fmt.Fprintf(stderr, "quick demo: cannot save the queue for --snapshot: %v\n", err)
		} else {
			sum.Snapshot = savePath
		}
	}
	if f == formatJSON {
		if err := writeJSON(out, sum); err != nil {
			return err
		}
	} else {
		if tty {
			fmt.Fprintln(out)
		}
		writeDemoSummary(out, sum, bound)
	}
	if sum.Interrupted {
		return fmt.Errorf("demo %w after %.1fs (Ctrl-C)", errInterrupted, elapsed.Seconds())
	}
	return nil
}

// demoMix builds the job mix: 3 long imports that checkpoint, 2 long
// exports that do not (their leases are renewed), 15% delayed
// reports, 12% webhooks (half flaky, 30% broken for good), and
// emails of mixed priority, 5% of which fail once.
func demoMix(rng *rand.Rand, n int, scale func(time.Duration) time.Duration) ([]quick.NewJob, int) {
	jobs := make([]quick.NewJob, 0, n)
	delayed := 0
	add := func(t string, j demoJob, nj quick.NewJob) {
		nj.ItemSpace = demoTenant(rng, t)
		if nj.ItemSpace == demoHotTenant && j.Steps == 0 && t != "export" {
			j.Ms *= demoHotWork // the hot tenant's jobs are heavier too: its zone backs up
		}
		b, _ := json.Marshal(j)
		nj.TaskType, nj.Payload = t, b
		jobs = append(jobs, nj)
	}
	imports := min(3, n/20+1)
	exports := min(2, n/50+1)
	for i := range n {
		switch r := rng.Float64(); {
		case i < imports:
			add("import", demoJob{N: i, Ms: 400, Steps: 8}, quick.NewJob{Priority: quick.Low})
		case i < imports+exports:
			add("export", demoJob{N: i, Ms: int(demoExportTime.Milliseconds())}, quick.NewJob{Priority: quick.Low})
		case r < 0.15:
			delayed++
			d := scale(time.Second + time.Duration(rng.Int64N(int64(5*time.Second))))
			add("report", demoJob{N: i, Ms: 50 + rng.IntN(100)}, quick.NewJob{Delay: d})
		case r < 0.27:
			j := demoJob{N: i, Ms: 20 + rng.IntN(40)}
			switch r2 := rng.Float64(); {
			case r2 < 0.3:
				j.Fail = "always"
			case r2 < 0.8:
				j.Fail = "once"
			}
			add("webhook", j, quick.NewJob{MaxAttempts: 3, Priority: quick.High})
		default:
			j := demoJob{N: i, Ms: 20 + rng.IntN(60)}
			if rng.Float64() < 0.05 {
				j.Fail = "once"
			}
			p := quick.Normal
			switch r2 := rng.Float64(); {
			case r2 < 0.1:
				p = quick.High
			case r2 < 0.3:
				p = quick.Low
			}
			add("email", j, quick.NewJob{Priority: p})
		}
	}
	return jobs, delayed
}

func demoHandler(taskType, workerID string, counts *demoCounts, dead *atomic.Bool, scale func(time.Duration) time.Duration, clk clock.Clock) worker.Handler[[]byte] {
	return func(ctx context.Context, job *worker.RawJob) error {
		if dead.Load() {
			return errors.New("killed")
		}
		counts.start(workerID, job.Lease)
		defer counts.end(workerID, job.Lease.ID)
		var j demoJob
		if err := json.Unmarshal(job.Args, &j); err != nil {
			return worker.Cancel("bad payload: " + err.Error())
		}
		step := 0
		if len(job.Lease.Checkpoint) > 0 {
			fmt.Sscan(string(job.Lease.Checkpoint), &step)
		}
		work := scale(time.Duration(j.Ms) * time.Millisecond)
		if taskType == "export" {
			work = time.Duration(j.Ms) * time.Millisecond // longer than its lease's renewal point at any --speed
		}
		for ; step < max(j.Steps, 1); step++ {
			if err := sleepCtx(ctx, clk, work); err != nil {
				return err
			}
			if j.Steps > 0 {
				if err := job.Checkpoint(ctx, []byte(fmt.Sprint(step+1))); err != nil {
					return err
				}
				counts.checkpointed(workerID)
			}
		}
		if dead.Load() {
			return errors.New("killed")
		}
		var err error
		switch {
		case j.Fail == "always":
			err = fmt.Errorf("%s %d: remote answered 410 Gone", taskType, j.N)
		case j.Fail == "once" && job.Lease.Attempt == 1:
			err = fmt.Errorf("%s %d: temporary failure (503), will retry", taskType, j.N)
		}
		if err != nil {
			counts.failed.Add(1)
			if job.Lease.MaxAttempts > 0 && job.Lease.Attempt >= job.Lease.MaxAttempts {
				counts.finish(job.Lease.ID, true)
			}
			return err
		}
		counts.finish(job.Lease.ID, false)
		return nil
	}
}

// sleepCtx sleeps d on clk (the demo's clock, so job times fast-forward
// with leases and delays).
func sleepCtx(ctx context.Context, clk clock.Clock, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-clk.After(d):
		return nil
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func remaining(reps []typeDepth) countRow {
	var r countRow
	r.Exact = true
	for _, rep := range reps {
		r.Ready += rep.Ready
		r.Leased += rep.Leased
		r.Scheduled += rep.Scheduled
		r.Exact = r.Exact && rep.Exact
	}
	return r
}

// progressLine is the demo's progress: a bar and the story's counters,
// under 80 columns.
func progressLine(s *demoCounts, total int, left countRow) string {
	return progressBar(s, total) + " · " + leftLine(left)
}

func progressBar(s *demoCounts, total int) string {
	claimDead := s.claimDead.Load()
	done := int(s.done.Load() + claimDead)
	width := 16
	fill := min(width, done*width/max(total, 1))
	return fmt.Sprintf("%s %d/%d done · %d retries · %d dead · %d takeovers · %d cron",
		strings.Repeat("█", fill)+strings.Repeat("░", width-fill), done, total,
		s.retries.Load(), s.dead.Load()+claimDead, s.takeovers.Load(), s.cronRuns.Load())
}

// readClaimDead sets claimDead from the queue: its dead letters (one counter
// read per type) beyond those the handlers ended.
func (s *demoCounts) readClaimDead(ctx context.Context, q *quick.Queue) error {
	var total int64
	for _, t := range demoTypes {
		n, err := q.DeadCount(ctx, t)
		if err != nil {
			return err
		}
		total += n
	}
	s.claimDead.Store(max(0, total-s.dead.Load()))
	return nil
}

func leftLine(left countRow) string {
	return fmt.Sprintf("left: %d ready, %d leased, %d scheduled", left.Ready, left.Leased, left.Scheduled)
}

func writeDemoSummary(w io.Writer, s demoSummary, bound time.Duration) {
	el := time.Duration(s.ElapsedMs) * time.Millisecond
	clockEl := time.Duration(s.ClockMs) * time.Millisecond
	r := s.Remaining
	switch {
	case s.Drained:
		fmt.Fprintf(w, "summary: drained in %.1fs (%.1fs on the demo clock): %d jobs (%d delayed),\n", el.Seconds(), clockEl.Seconds(), s.Jobs, s.Delayed)
	case s.Interrupted:
		fmt.Fprintf(w, "summary: interrupted (Ctrl-C) after %.1fs with %d jobs left (%d ready, %d leased,\n  %d scheduled): %d jobs (%d delayed),",
			el.Seconds(), r.Ready+r.Leased+r.Scheduled, r.Ready, r.Leased, r.Scheduled, s.Jobs, s.Delayed)
	default:
		fmt.Fprintf(w, "summary: stopped by the %v bound after %.1fs with %d jobs left (%d ready, %d leased,\n  %d scheduled): %d jobs (%d delayed),",
			bound, el.Seconds(), r.Ready+r.Leased+r.Scheduled, r.Ready, r.Leased, r.Scheduled, s.Jobs, s.Delayed)
	}
	if !s.Drained {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %d completed, %d dead letters; %d runs: %d retries after failures,\n", s.Completed, s.DeadLetters, s.Runs, s.Retries)
	fmt.Fprintf(w, "  %d lease takeovers (%d resumed from a checkpoint), %d cron runs\n", s.Takeovers, s.Resumed, s.CronRuns)
	var ts []string
	for _, t := range s.Tenants {
		if t.ItemSpace != "" {
			ts = append(ts, fmt.Sprintf("%s %d", t.ItemSpace, t.Jobs))
		}
	}
	fmt.Fprintf(w, "  tenants: %s\n", cut(strings.Join(ts, ", "), 69))
	for _, g := range s.ZonesGrown {
		fmt.Fprintf(w, "  zone %s/%s grew from %d to %d lanes under its backlog\n", g.TaskType, g.ItemSpace, g.From, g.To)
	}
	if len(s.ZonesGrown) == 0 {
		fmt.Fprintln(w, "  no zone grew: no tenant's backlog outlasted a second (more --jobs makes one)")
	}
	if s.Killed != "" {
		fmt.Fprintf(w, "  killed %s at %.1fs (demo clock) while it ran %d jobs\n", s.Killed, float64(s.KilledAtMs)/1000, s.KilledHolding)
	}
	p := s.PerJob
	fmt.Fprintf(w, "  FDB operations per job (%d jobs and cron runs; all counted: enqueue, claims,\n", s.Completed+s.DeadLetters+s.CronRuns)
	fmt.Fprintf(w, "  acks, lease renewals, checkpoints, heartbeats, cron): %.1f read versions,\n", p.ReadVersions)
	fmt.Fprintf(w, "    %.1f point reads, %.1f range reads, %.1f keys read, %.1f mutations,\n", p.Reads, p.RangeReads, p.KeysRead, p.Mutations)
	fmt.Fprintf(w, "    %.0f bytes written, %.1f commits, %.2f conflicts\n", p.BytesWritten, p.Commits, p.Conflicts)
	sort.Slice(s.Workers, func(i, j int) bool { return s.Workers[i].ID < s.Workers[j].ID })
	for _, ws := range s.Workers {
		fmt.Fprintf(w, "  %s: done %d, failed %d, dead %d; lease renewals %d, checkpoints %d\n",
			ws.ID, ws.Completed, ws.Failed, ws.DeadLettered, ws.LeaseRenewals, ws.Checkpoints)
	}
	if s.Snapshot != "" {
		p := shellQuote(s.Snapshot)
		fmt.Fprintf(w, "the queue is saved in %s; try the CLI on it (no FoundationDB needed):\n", s.Snapshot)
		fmt.Fprintf(w, "  quick --snapshot %s stats\n", p)
		fmt.Fprintf(w, "  quick --snapshot %s dead list --type webhook\n", p)
		fmt.Fprintf(w, "  quick --snapshot %s dead requeue --type webhook\n", p)
	}
}

// shellQuote quotes a path for a command line to copy, when it needs it.
func shellQuote(p string) string {
	for _, r := range p {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return p
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
