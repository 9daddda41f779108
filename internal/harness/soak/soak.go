package soak

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/harness/pages"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

const (
	workType = "soak"
	// Cron chains run under two task types: an edit moves a chain from one
	// to the other while it runs. Every worker handles both.
	cronType  = "soak-cron"
	cronType2 = "soak-cron-2"
)

var cronTypes = []string{cronType, cronType2}

// Report is a soak run's outcome.
type Report struct {
	Config Config `json:"config"`
	// Engine names the database the soak ran on (Run: memkv with FDB's
	// latencies; RunOn: what its caller says, else "a kv.Database").
	Engine        string        `json:"engine"`
	Elapsed       float64       `json:"elapsed_s"`
	Kills         int64         `json:"kills"`
	Pauses        int64         `json:"pauses"`
	ExhaustPauses int64         `json:"exhaust_pauses"`
	CronEdits     int64         `json:"cron_edits"`
	WorkersRun    int           `json:"workers_started"`
	Faults        kv.FaultStats `json:"faults"` // injected into every database of the run
	ClaimCommits  int64         `json:"commits"`
	// NaturalConfl counts the conflicts the database itself reported: the
	// counters sit under the fault injector, whose conflicts never reach
	// them.
	NaturalConfl int64 `json:"natural_conflicts"`
	// DrainStalled is set when the queue stopped changing for drainStalls
	// polls in a row with work jobs still queued.
	DrainStalled bool `json:"drain_stalled"`
	// Lane resizes done (and failed), and whether automatic idempotency
	// was available to the producers asked to use it.
	Resizes         int64 `json:"resizes,omitempty"`
	ResizeErrors    int64 `json:"resize_errors,omitempty"`
	AutoIdempotency bool  `json:"auto_idempotency,omitempty"`
	// Enqueues counts the producers' enqueue calls, SlowEnqueues those
	// over a second, SlowestEnqueue the longest (s): the producers wait
	// for each, so they bound how many jobs a run checks.
	Enqueues       int64   `json:"enqueues"`
	SlowEnqueues   int64   `json:"slow_enqueues"`
	SlowestEnqueue float64 `json:"slowest_enqueue_s"`
	// The drivers of issues 22 and 24: enqueue batches made (IDs
	// repeated in them, IDs generated), lanes stripped of their pointer
	// (and found repaired), the worker's refusals to start a prefetched
	// job it knew lost, and limit changes.
	Batches         int64 `json:"batches"`
	BatchRepeats    int64 `json:"batch_repeats"`
	BatchGenerated  int64 `json:"batch_generated"`
	Unpointed       int64 `json:"unpointed"`
	UnpointRepaired int64 `json:"unpoint_repaired"`
	RefusedStarts   int64 `json:"refused_starts"`
	LimitChanges    int64 `json:"limit_changes"`
	// The mover (moves.go): moves within the main database and between
	// two (each direction counted), adoptions, deletions, operations
	// interrupted and resumed, and the jobs moved, adopted and deleted.
	MovesWithin  int64 `json:"moves_within,omitempty"`
	MovesBetween int64 `json:"moves_between,omitempty"`
	Adopts       int64 `json:"adopts,omitempty"`
	Deletes      int64 `json:"deletes,omitempty"`
	Interrupted  int64 `json:"tenant_ops_interrupted,omitempty"`
	JobsMoved    int64 `json:"jobs_moved,omitempty"`
	JobsAdopted  int64 `json:"jobs_adopted,omitempty"`
	JobsDeleted  int64 `json:"jobs_deleted,omitempty"`
	// LoadAvg is the machine's load average at the end (/proc/loadavg;
	// "n/a" elsewhere): a loaded machine enqueues and so checks fewer jobs.
	LoadAvg string  `json:"load_avg,omitempty"`
	Verdict Verdict `json:"verdict"`
}

// harness is one soak run's shared state.
type harness struct {
	cfg   Config
	db    *kv.FaultyDB
	cnt   *kv.CountedDB
	space tuple.Subspace // the queue's
	hist  tuple.Subspace // completion records
	// tenantData holds the zones of the tenants that keep them in a
	// subspace of their own (ownSpace), outside the queue's; movedData
	// those the mover placed (in whichever database).
	tenantData, movedData tuple.Subspace
	// extra are the away and side databases of the mover (nil without
	// moves), routes where each tenant's zones are.
	extra  [numDBs]*kv.FaultyDB
	routes routes
	zoneCounters
	moveCounters
	rec   recorder
	chaos atomic.Bool
	// handlers counts running handlers, each until its completing
	// transaction has ended (tracked): Kill does not wait for them, and
	// the history must not be read while one may still write. inflight is
	// the same count, readable.
	handlers      sync.WaitGroup
	inflight      atomic.Int64
	kills         atomic.Int64
	pause         atomic.Int64
	exhaustPauses atomic.Int64
	cronVanished  atomic.Bool
	// vanishedOcc is the cron occurrence whose worker vanished mid-run
	// (set once, with cronVanished): the drain waits for a claim to
	// dead-letter it.
	vanishedOcc atomic.Pointer[quick.ID]
	edits       atomic.Int64
	tooLarge    *sizeWatch

	// enqueues counts the producers' enqueue calls, slowEnqueues those
	// that took over a second, slowestEnqueue the longest (ns): a producer
	// enqueues one call at a time, so slow enqueues are what makes a soak
	// check fewer jobs.
	enqueues, slowEnqueues, slowestEnqueue atomic.Int64
	batches, batchRepeats, batchGenerated  atomic.Int64
	unpointed, unpointRepaired             atomic.Int64
	refused, limitChanges                  atomic.Int64

	// onCronCommit, set by tests before any worker starts, runs inside
	// every transaction that completes a cron occurrence.
	onCronCommit func()
	// killReq carries the IDs of workers whose handler asks to be killed
	// (the exhausting jobs), served by the killer during the chaos phase.
	killReq chan string

	editMu    sync.Mutex
	edited    map[string]bool
	recreated map[string]bool

	logger *slog.Logger

	rngMu sync.Mutex
	rng   *rand.Rand
}

func (h *harness) float() float64 {
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return h.rng.Float64()
}

func (h *harness) jobDuration() time.Duration {
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return time.Duration(h.rng.ExpFloat64() * float64(h.cfg.JobMean))
}

// shouldPause draws whether a handler blocks past its lease; only during
// the chaos phase, so the drain can finish. The first run of the phase
// always does (when PauseShare is set), so every soak pauses at least once.
func (h *harness) shouldPause() bool {
	if !h.chaos.Load() || h.cfg.PauseShare <= 0 {
		return false
	}
	if !h.pause.CompareAndSwap(0, 1) {
		if h.float() >= h.cfg.PauseShare {
			return false
		}
		h.pause.Add(1)
	}
	return true
}

// vanish makes the calling handler's worker vanish mid-run: it asks the
// killer for the worker's death and, in case that does not come (the chaos
// phase is over, or the request queue is full), freezes the whole worker
// past the lease.
func (h *harness) vanish(wid string, clk *workerClock) {
	h.exhaustPauses.Add(1)
	select {
	case h.killReq <- wid:
	default:
	}
	clk.Pause(h.cfg.exhaustPause())
}

// newHarness wraps db: counters under the fault injector, a watch for
// oversized commits between them.
func newHarness(db kv.Database, base tuple.Subspace, cfg Config) *harness {
	cnt := kv.WithCounters(db)
	sw := &sizeWatch{inner: cnt}
	h := &harness{
		cfg: cfg, cnt: cnt, tooLarge: sw,
		space: base.Sub("q"), hist: base.Sub("hist"), tenantData: base.Sub("tenants"), movedData: base.Sub("moved"),
		rng:       rand.New(rand.NewPCG(cfg.Seed, 7)),
		edited:    map[string]bool{},
		recreated: map[string]bool{},
		killReq:   make(chan string, 64),
	}
	h.db = kv.WithFaults(sw, h.faults())
	h.setLogger(slog.NewTextHandler(io.Discard, nil))
	return h
}

// setLogger logs through inner, counting the worker's refused starts.
func (h *harness) setLogger(inner slog.Handler) {
	h.logger = slog.New(countHandler{inner: inner, refused: &h.refused})
}

func (h *harness) histKey(id quick.ID, token uint64, nonce []byte) []byte {
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], token)
	return h.hist.Pack(tuple.Tuple{tuple.UUID(id), t[:], nonce})
}

// openQueue opens a queue handle of database dbi on clk: every
// worker has its own, since a quick.Queue takes its time from its options.
func (h *harness) openQueue(ctx context.Context, dbi int, clk clock.Clock) (*quick.Queue, error) {
	return quick.Open(ctx, h.dbAt(dbi), h.space, h.queueOptions(dbi, clk, false))
}

// openExtra opens the mover's away and side databases: memkv, with FDB's
// latencies, under the main one's faults (each its own seed).
func (h *harness) openExtra() (closeAll func()) {
	var closers []func()
	for dbi := awayDB; dbi < numDBs; dbi++ {
		mem := memkv.Open(memkv.Options{Latency: memkv.FDBLatency(), Seed: int64(h.cfg.Seed) + int64(dbi)})
		closers = append(closers, func() { mem.Close() })
		f := h.faults()
		f.Seed += uint64(dbi) * 1000
		h.extra[dbi] = kv.WithFaults(mem, f)
	}
	return func() {
		for _, c := range closers {
			c()
		}
	}
}

// faults are the commit faults of the run's databases.
func (h *harness) faults() kv.Faults {
	cfg := h.cfg
	return kv.Faults{Seed: cfg.Seed, UnknownCommitted: cfg.UnknownCommitted,
		UnknownNotCommitted: cfg.UnknownNotCommitted, Conflict: cfg.Conflict,
		TimedOutCommitted: cfg.TimedOutCommitted, TimedOutNotCommitted: cfg.TimedOutNotCommitted,
		CancelledCommitted: cfg.CancelledCommitted, CancelledNotCommitted: cfg.CancelledNotCommitted}
}

// Run runs one soak on memkv with FDB's latencies and returns the checker's
// verdict with the counts of what was injected. log gets progress lines.
func Run(ctx context.Context, cfg Config, log io.Writer) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	mem := memkv.Open(memkv.Options{Latency: memkv.FDBLatency(), Seed: int64(cfg.Seed)})
	defer mem.Close()
	rep, err := RunOn(ctx, mem, tuple.FromTuple(tuple.Tuple{"soak"}), cfg, log)
	rep.Engine = "memkv+FDBLatency"
	return rep, err
}

// RunOn runs one soak on db under base, which it leaves holding the queue
// and history for inspection.
func RunOn(ctx context.Context, db kv.Database, base tuple.Subspace, cfg Config, log io.Writer) (Report, error) {
	started := time.Now()
	h := newHarness(db, base, cfg)
	cnt := h.cnt
	if cfg.Verbose {
		h.setLogger(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	rep := Report{Config: cfg}
	if cfg.MoveEvery > 0 {
		defer h.openExtra()()
	}
	admin, err := h.admin(ctx, false)
	if err != nil {
		return rep, err
	}
	chains := make([]cron.Schedule, cfg.CronSchedules)
	for s := range chains {
		chains[s] = chainSchedule(cfg, s)
		if err := cron.Register(ctx, admin, chains[s]); err != nil {
			return rep, fmt.Errorf("soak: register cron %d: %w", s, err)
		}
	}

	if cfg.Limits {
		h.setLimits(ctx, 0) // before any worker claims
	}
	h.chaos.Store(true)
	var (
		mu      sync.Mutex
		workers []*soakWorker
		all     []*soakWorker
		seq     int
	)
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	// startIn starts a worker of database dbi; those of the main one are
	// the killer's to kill.
	startIn := func(dbi int) error {
		seq++
		clk := &workerClock{offset: time.Duration((2*h.float() - 1) * float64(cfg.Skew))}
		if seq == 1 {
			clk.offset += cfg.FarSkew
		}
		id := fmt.Sprintf("w%03d", seq)
		if dbi != mainDB {
			id = fmt.Sprintf("a%03d", seq)
		}
		clk.onPause = func(from, to time.Time) { h.rec.freeze(Freeze{Worker: id, From: from, To: to}) }
		w, err := h.startWorker(wctx, dbi, id, clk)
		if err != nil {
			return err
		}
		if dbi == mainDB {
			workers = append(workers, w)
		}
		all = append(all, w)
		return nil
	}
	start := func() error { return startIn(mainDB) }
	mu.Lock()
	for range cfg.Workers {
		if err := start(); err != nil {
			mu.Unlock()
			return rep, err
		}
	}
	if h.dbAt(awayDB) != nil {
		for range cfg.awayWorkers() {
			if err := startIn(awayDB); err != nil {
				mu.Unlock()
				return rep, err
			}
		}
	}
	mu.Unlock()

	chaosCtx, endChaos := context.WithTimeout(ctx, cfg.chaos())
	defer endChaos()
	var bg sync.WaitGroup
	for p := range cfg.Producers {
		bg.Add(1)
		go func() {
			defer bg.Done()
			h.produce(chaosCtx, p)
		}()
	}
	if cfg.ResizeEvery > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			h.resize(chaosCtx)
		}()
	}
	for _, loop := range []struct {
		on  bool
		run func(context.Context)
	}{
		{cfg.PrefetchRate > 0, h.produceHolds},
		{cfg.PrefetchRate > 0 && cfg.CancelEvery > 0, h.cancelPrefetched},
		{cfg.UnpointEvery > 0, h.unpointLoop},
		{cfg.Limits && cfg.LimitEvery > 0, h.limitLoop},
		{cfg.MoveEvery > 0, h.moveLoop},
	} {
		if loop.on {
			bg.Add(1)
			go func() {
				defer bg.Done()
				loop.run(chaosCtx)
			}()
		}
	}
	if cfg.RequeueShare > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			h.requeueLoop(chaosCtx)
		}()
	}
	bg.Add(1)
	go func() { // the killer: random workers, and those that ask for it
		defer bg.Done()
		for {
			t := time.NewTimer(time.Duration(h.rngExp() * float64(cfg.KillEvery)))
			pick := func() int { return int(h.float() * float64(len(workers))) }
			select {
			case <-chaosCtx.Done():
				t.Stop()
				return
			case <-t.C:
			case id := <-h.killReq:
				t.Stop()
				pick = func() int { return slices.IndexFunc(workers, func(w *soakWorker) bool { return w.id == id }) }
			}
			mu.Lock()
			if i := pick(); i >= 0 {
				h.rec.kill(workers[i].id, time.Now())
				workers[i].Kill()
				workers = append(workers[:i], workers[i+1:]...)
				h.kills.Add(1)
				_ = start()
			}
			mu.Unlock()
		}
	}()
	if cfg.CronEditEvery > 0 && len(chains) > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			h.editCron(chaosCtx, chains)
		}()
	}
	<-chaosCtx.Done()
	bg.Wait()
	h.chaos.Store(false)
	fmt.Fprintf(log, "soak: chaos phase over after %v: %d kills, %d pauses, %d exhausting pauses, %d cron edits; draining\n",
		time.Since(started).Round(time.Millisecond), h.kills.Load(), h.pause.Load(), h.exhaustPauses.Load(), h.edits.Load())
	rep.DrainStalled = !h.drain(ctx)
	// Kill, not stop: a graceful stop would release jobs and leave the
	// registry, writes the checker does not need racing its reads.
	for _, w := range all {
		w.Kill()
	}
	stopWorkers()
	for _, w := range all {
		w.Wait()
	}
	h.handlers.Wait()
	for dbi := range numDBs {
		if db := h.dbAt(dbi); db != nil {
			db.SetEnabled(false)
		}
	}

	hist, err := h.history(ctx, admin)
	if err != nil {
		return rep, err
	}
	rep.Resizes, rep.ResizeErrors = h.resizes.Load(), h.resizeErrs.Load()
	rep.AutoIdempotency = cfg.AutoIdemProducers > 0 && h.autoIdemAvailable()
	rep.Verdict = Check(hist)
	rep.Elapsed = time.Since(started).Seconds()
	rep.Kills, rep.Pauses, rep.WorkersRun = h.kills.Load(), h.pause.Load(), len(all)
	rep.ExhaustPauses, rep.CronEdits = h.exhaustPauses.Load(), h.edits.Load()
	rep.Batches, rep.BatchRepeats, rep.BatchGenerated = h.batches.Load(), h.batchRepeats.Load(), h.batchGenerated.Load()
	rep.Unpointed, rep.UnpointRepaired = h.unpointed.Load(), h.unpointRepaired.Load()
	rep.RefusedStarts, rep.LimitChanges = h.refused.Load(), h.limitChanges.Load()
	rep.MovesWithin, rep.MovesBetween, rep.Adopts, rep.Deletes = h.movesWithin.Load(), h.movesBetween.Load(), h.adopts.Load(), h.deletes.Load()
	rep.Interrupted, rep.JobsMoved, rep.JobsAdopted, rep.JobsDeleted = h.interrupted.Load(), h.moved.Load(), h.adopted.Load(), h.deleted.Load()
	rep.Enqueues, rep.SlowEnqueues = h.enqueues.Load(), h.slowEnqueues.Load()
	rep.LoadAvg = loadAvg()
	rep.SlowestEnqueue = time.Duration(h.slowestEnqueue.Load()).Seconds()
	for dbi := range numDBs {
		if db := h.dbAt(dbi); db != nil {
			rep.Faults = addFaults(rep.Faults, db.Stats())
		}
	}
	st := cnt.Stats()
	rep.ClaimCommits, rep.NaturalConfl = st.Commits, st.Conflicts
	return rep, nil
}

// addFaults sums the faults injected into two databases.
func addFaults(a, b kv.FaultStats) kv.FaultStats {
	a.UnknownCommitted += b.UnknownCommitted
	a.UnknownNotCommitted += b.UnknownNotCommitted
	a.Conflicts += b.Conflicts
	a.TimedOutCommitted += b.TimedOutCommitted
	a.TimedOutNotCommitted += b.TimedOutNotCommitted
	a.CancelledCommitted += b.CancelledCommitted
	a.CancelledNotCommitted += b.CancelledNotCommitted
	a.SlowCommits += b.SlowCommits
	return a
}

func (h *harness) rngExp() float64 {
	h.rngMu.Lock()
	defer h.rngMu.Unlock()
	return h.rng.ExpFloat64()
}

// produce enqueues this producer's share of the rate until ctx ends. Each
// enqueue runs to its end even when the phase ends, so every job is known
// to exist or not; one that fails outright is recorded as uncertain.
func (h *harness) produce(ctx context.Context, p int) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, uint64(100+p)))
	per := time.Duration(float64(time.Second) * float64(h.cfg.Producers) / h.cfg.Rate)
	c := h.cfg
	var mem markerMemory
	// The producer keeps to a schedule, its tick-th enqueue at start +
	// tick·per, rather than sleeping per after each: an enqueue slowed by
	// a loaded machine delays the next ones, not the rate. (Sleeping after
	// each made the job count follow the enqueue latency: one process's 10
	// seeds checked 27 to 1,036 jobs each.)
	start := time.Now()
	for n, tick := 0, 1; ; n, tick = n+1, tick+1 {
		if !sleep(ctx, time.Until(start.Add(time.Duration(tick)*per))) {
			return
		}
		if c.BatchShare > 0 && n >= len(firstKinds) && rng.Float64() < c.BatchShare {
			tt := workType
			if c.ShortShare > 0 && rng.Float64() < c.ShortShare {
				tt = shortType
			}
			q, err := h.admin(ctx, p < c.AutoIdemProducers)
			if err != nil {
				continue
			}
			h.enqueueBatch(ctx, q, rng, p, &n, tt, &mem)
			continue
		}
		kind := KindNormal
		r := rng.Float64()
		slowFirst := false
		for _, k := range []struct {
			share float64
			kind  string
		}{
			{c.PoisonShare, KindPoison}, {c.TransientShare, KindTransient}, {c.ExhaustShare, KindExhaust},
			{c.LargeShare, KindLarge}, {c.CheckpointShare, KindCheckpoint}, {c.RequeueShare, KindRequeue},
			{c.SlowShare, KindSlow},
		} {
			if r < k.share {
				kind = k.kind
				break
			}
			r -= k.share
		}
		// Producer 0 starts with one job of each special kind the run
		// has, so that a run exercises each whatever its seed (a share
		// of 1% left a 22 s run without a slow job now and then, and the
		// zones soak's check of them failed).
		// The first slow job runs in short-job mode, where slower than the
		// lane lease means a promotion to a per-job lease.
		if p == 0 && n < len(firstKinds) && firstKinds[n].share(c) > 0 {
			kind = firstKinds[n].kind
			slowFirst = kind == KindSlow
		}
		tt := workType
		if c.ShortShare > 0 && (rng.Float64() < c.ShortShare || slowFirst) {
			tt = shortType
		}
		var delay time.Duration
		if c.DelayedShare > 0 && rng.Float64() < c.DelayedShare {
			delay = time.Duration(rng.Int64N(int64(c.DelayMax)))
		}
		q, err := h.admin(ctx, p < c.AutoIdemProducers)
		if err != nil {
			h.logger.Warn("soak: open a producer's queue", "err", err)
			continue
		}
		h.enqueueOne(ctx, q, rng, p, n, tt, kind, delay)
	}
}

// enqueueOne enqueues producer p's job n and records it.
func (h *harness) enqueueOne(ctx context.Context, q *quick.Queue, rng *rand.Rand, p, n int, tt, kind string, delay time.Duration) {
	maxAttempts, pad := 0, 0
	switch kind {
	case KindPoison:
		maxAttempts = h.cfg.PoisonAttempts
	case KindExhaust, KindRequeue:
		maxAttempts = 1
	case KindLarge:
		pad = 1 + rng.IntN(h.cfg.LargeBytes)
	}
	tenant := h.pickTenant(rng)
	if kind == KindHold {
		tenant = "" // the prefetch type's one zone
	}
	dbi, ok := h.routes.enter(tenant)
	for !ok { // held for an adoption's copy: another tenant
		tenant = h.pickTenant(rng)
		dbi, ok = h.routes.enter(tenant)
	}
	defer h.routes.leave(tenant)
	if dbi != mainDB {
		var err error
		if q, err = h.adminIn(ctx, dbi, false); err != nil {
			h.logger.Warn("soak: open a producer's queue", "err", err)
			return
		}
	}
	body, _ := json.Marshal(payload{Kind: kind, Producer: p, Seq: n, Pad: strings.Repeat("x", pad)})
	id := q.NewID()
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	began := time.Now()
	_, err := q.Enqueue(ectx, quick.NewJob{ID: id, TaskType: tt, ItemSpace: tenant, Payload: body, MaxAttempts: maxAttempts, Delay: delay, UniqueKey: h.uniqueKey(id)})
	h.enqueueTook(time.Since(began))
	cancel()
	if err != nil {
		h.logger.Warn("soak: enqueue", "id", id, "err", err)
	}
	h.rec.job(JobRec{ID: id, Kind: kind, Producer: p, Seq: n, TaskType: tt, Tenant: tenant, Uncertain: err != nil})
}

// history assembles the recorded history and reads the final database:
// the completion records, the jobs still queued and the dead letters.
func (h *harness) history(ctx context.Context, q *quick.Queue) (History, error) {
	h.rec.mu.Lock()
	hist := History{Jobs: h.rec.jobs, Claims: h.rec.claims, Runs: h.rec.runs}
	h.rec.mu.Unlock()
	entries, err := cron.List(ctx, q)
	if err != nil {
		return hist, err
	}
	for _, e := range entries {
		hist.CronEntries = append(hist.CronEntries, CronEntry{Name: e.Name, Alive: e.Alive, Next: e.Next, NextID: e.NextID})
	}
	queued, _, err := h.queued(ctx, h.allTypes())
	if err != nil {
		return hist, err
	}
	for _, tt := range h.workTypes() {
		hist.Pending = append(hist.Pending, queued[tt]...)
		for _, dbi := range h.workedDBs() {
			dq, err := h.adminIn(ctx, dbi, false)
			if err != nil {
				return hist, err
			}
			dead, err := pages.Dead(ctx, dq, tt)
			if err != nil {
				return hist, err
			}
			hist.Dead = append(hist.Dead, dead...)
		}
	}
	for _, tt := range cronTypes {
		dead, err := pages.Dead(ctx, q, tt)
		if err != nil {
			return hist, err
		}
		hist.CronPending = append(hist.CronPending, queued[tt]...)
		hist.CronDead = append(hist.CronDead, dead...)
	}
	hist.CronInfo = map[quick.ID]string{}
	for _, id := range hist.CronPending {
		if info, err := q.Get(ctx, id); err == nil {
			hist.CronInfo[id] = fmt.Sprintf("%s %s attempt %d/%d holder %q unique %q run at %s", info.TaskType, info.State, info.Attempt, info.MaxAttempts, info.Holder, info.UniqueKey, info.RunAt.UTC().Format("15:04:05.000"))
		} else {
			hist.CronInfo[id] = err.Error()
		}
	}
	if hist.IndexLeft, err = h.indexLeft(ctx); err != nil {
		return hist, err
	}
	h.rec.mu.Lock()
	hist.HandlerProblems = slices.Clone(h.rec.problems)
	hist.LostStarts = slices.Clone(h.rec.lostStarts)
	hist.Generated = slices.Clone(h.rec.generated)
	hist.Cancels = slices.Clone(h.rec.cancels)
	hist.Freezes = slices.Clone(h.rec.freezes)
	hist.Kills = maps.Clone(h.rec.kills)
	hist.Limits = slices.Clone(h.rec.limits)
	hist.Moves, hist.Deletes, hist.Fences = slices.Clone(h.rec.moves), slices.Clone(h.rec.deletes), slices.Clone(h.rec.fences)
	h.rec.mu.Unlock()
	if hist.Left, err = h.leftOf(ctx, hist.Deletes, hist.Moves); err != nil {
		return hist, err
	}
	hist.Skew = h.cfg.Skew
	h.editMu.Lock()
	hist.CronEdited, hist.CronRecreated = maps.Clone(h.edited), maps.Clone(h.recreated)
	h.editMu.Unlock()
	hist.TooLarge = h.tooLarge.n.Load()
	// Each completion wrote its record in its own transaction, so in the
	// database its job lived in then: every database is read.
	b, e := h.hist.Range()
	var kvs []kv.KeyValue
	for dbi := range numDBs {
		db := h.dbAt(dbi)
		if db == nil {
			continue
		}
		var got []kv.KeyValue
		err = db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			got, err = tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{}).GetSliceWithError()
			return err
		})
		if err != nil {
			return hist, err
		}
		kvs = append(kvs, got...)
	}
	for _, p := range kvs {
		t, err := h.hist.Unpack(p.Key)
		if err != nil || len(t) != 3 {
			return hist, fmt.Errorf("soak: bad history key %x", p.Key)
		}
		id, _ := t[0].(tuple.UUID)
		tok, _ := t[1].([]byte)
		var c completion
		if err := json.Unmarshal(p.Value, &c); err != nil || len(tok) != 8 {
			return hist, fmt.Errorf("soak: bad history record %x", p.Key)
		}
		hist.Completions = append(hist.Completions, CompletionRec{
			ID: quick.ID(id), Token: binary.BigEndian.Uint64(tok), Worker: c.Worker, Attempt: c.Attempt,
			Schedule: c.Schedule, ScheduledAt: c.ScheduledAt,
		})
	}
	return hist, nil
}

// WriteSummary prints the counts the checker checked.
func (r Report) WriteSummary(w io.Writer) {
	v := r.Verdict
	engine := r.Engine
	if engine == "" {
		engine = "a kv.Database"
	}
	fmt.Fprintf(w, "soak (%d tenants): %.1fs on %s, %d workers (package worker) at a time (%d started), skew ±%v, lease %v, cron %q\n",
		r.Config.Tenants, r.Elapsed, engine, r.Config.Workers, r.WorkersRun, r.Config.Skew, r.Config.Lease, r.Config.CronSpec)
	fmt.Fprintf(w, "jobs checked:            %d (completed %d, dead-lettered %d as configured)\n", v.Jobs, v.Completed, v.DeadLettered)
	fmt.Fprintf(w, "claims / handler runs:   %d / %d\n", v.Claims, v.Runs)
	fmt.Fprintf(w, "producers' enqueues:     %d calls, %d over 1 s, the slowest %.1f s; load average at the end %s\n", r.Enqueues, r.SlowEnqueues, r.SlowestEnqueue, r.LoadAvg)
	fmt.Fprintf(w, "kills:                   %d\n", r.Kills)
	fmt.Fprintf(w, "pauses past the lease:   %d (plus %d by jobs built to exhaust their one attempt)\n", r.Pauses, r.ExhaustPauses)
	fmt.Fprintf(w, "1021 injected:           %d committed, %d not committed\n", r.Faults.UnknownCommitted, r.Faults.UnknownNotCommitted)
	fmt.Fprintf(w, "1031/1025 in commit:     %d/%d committed, %d/%d not committed\n", r.Faults.TimedOutCommitted, r.Faults.CancelledCommitted, r.Faults.TimedOutNotCommitted, r.Faults.CancelledNotCommitted)
	fmt.Fprintf(w, "conflicts injected:      %d (plus %d real ones, of %d write commits)\n", r.Faults.Conflicts, r.NaturalConfl, r.ClaimCommits)
	fmt.Fprintf(w, "overlaps (at-least-once): %d\n", v.Overlaps)
	fmt.Fprintf(w, "jobs exhausted / large:  %d dead-lettered by a claim (%d completed by their woken holder) / %d up to %d bytes\n",
		v.Exhausted, v.ExhaustCompleted, v.Large, r.Config.LargeBytes)
	fmt.Fprintf(w, "cron occurrences:        %d completed over %d chains (fewest for one chain: %d), %d dead-lettered with a successor, %d edits, %d runs abandoned by an edit\n",
		v.CronCompleted, v.CronChains, v.CronFewest, v.CronDeadLettered, r.CronEdits, v.CronAbandoned)
	fmt.Fprintf(w, "oversized transactions:  %d\n", v.TooLarge)
	fmt.Fprintf(w, "known-lost starts:       %d handlers started for a lease the worker knew lost (%d prefetched starts refused)\n", v.LostStarts, r.RefusedStarts)
	fmt.Fprintf(w, "prefetch cancels:        %d cancelled while prefetched (%d never started), %d found finished\n", v.Cancelled, v.CancelledUnrun, v.CancelledLate)
	fmt.Fprintf(w, "enqueue batches:         %d (%d repeated IDs answered duplicate, %d generated IDs; %d found from failed calls)\n", r.Batches, r.BatchRepeats, r.BatchGenerated, v.Generated)
	fmt.Fprintf(w, "lanes without pointer:   %d stripped, %d repaired by the cover\n", r.Unpointed, r.UnpointRepaired)
	if r.Config.Limits {
		fmt.Fprintf(w, "limits:                  %d changes; %d runs of limited tenants, most at once %s (with the runs of frozen or killed holders: %s), %d runs cut as their holder froze or was killed; rate: %d claims, at most %d in one second\n",
			r.LimitChanges, v.LimitRuns, limitFigures(v.LimitMax), limitFigures(v.LimitMaxAll), v.LimitLapsed, v.RateClaims, v.RateMaxInSecond)
	}
	{
		idem := "not in this engine: markers"
		if r.AutoIdempotency {
			idem = "on"
		}
		fmt.Fprintf(w, "zones:                   %d tenants (%d own subspaces, hot share %.2f), %d short-job, %d lane resizes (%d failed), lane lease %v\n",
			v.Tenants, r.Config.ownSpaces(), r.Config.HotShare, v.Short, r.Resizes, r.ResizeErrors, r.Config.laneLease())
		fmt.Fprintf(w, "zones jobs:              %d completed after a requeue, %d resumed from a checkpoint, %d slow (%v); automatic idempotency for %d producer(s): %s\n",
			v.Requeued, v.Resumed, v.Slow, r.Config.SlowFor, r.Config.AutoIdemProducers, idem)
		if r.Config.LongNames {
			fmt.Fprintf(w, "long names:              tenant names of %d bytes, unique keys of %d bytes, failure reasons over 2,000 bytes\n",
				quick.MaxItemSpaceLen, quick.MaxUniqueKeyLen)
		}
	}
	if r.Config.MoveEvery > 0 {
		fmt.Fprintf(w, "tenant moves:            %d within the database, %d between two, %d adoptions, %d deletions (%d calls interrupted or failed and resumed)\n",
			r.MovesWithin, r.MovesBetween, r.Adopts, r.Deletes, r.Interrupted)
		fmt.Fprintf(w, "moved jobs:              %d moved, %d adopted, %d deleted (%d jobs of deleted tenants checked); %d ran again because leased at a move's fence\n",
			r.JobsMoved, r.JobsAdopted, r.JobsDeleted, v.DeletedJobs, v.FenceReruns)
	}
	if r.DrainStalled {
		fmt.Fprintln(w, "drain:                   STALLED (jobs were still queued and nothing moved)")
	}
	fmt.Fprintf(w, "violations: %d\n", len(v.Violations))
	for _, s := range v.Violations {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

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

// WriteTotals sums the figures of several soaks (the full mode's seeds).
func WriteTotals(w io.Writer, reps []Report) {
	var jobs, lost, stale, chains, doubled, dupJobs, large, exhausted, cronDead, overlaps, edits, tooLarge, violations int
	var kills, pauses, unkC, unkN, confl, inCommit int64
	var lostStarts, cancelled, cancelledUnrun, refused, batches, repeats, generated, unpointed, repaired, limitRuns, lapsed int64
	var moves, adopts, deletes, moved, reruns int64
	limMax, limMaxAll := map[string]int{}, map[string]int{}
	for _, r := range reps {
		v := r.Verdict
		lostStarts += int64(v.LostStarts)
		cancelled += int64(v.Cancelled)
		cancelledUnrun += int64(v.CancelledUnrun)
		refused += r.RefusedStarts
		batches += r.Batches
		repeats += r.BatchRepeats
		generated += r.BatchGenerated
		unpointed += r.Unpointed
		repaired += r.UnpointRepaired
		limitRuns += int64(v.LimitRuns)
		moves += r.MovesWithin + r.MovesBetween
		adopts += r.Adopts
		deletes += r.Deletes
		moved += r.JobsMoved + r.JobsAdopted
		reruns += int64(v.FenceReruns)
		lapsed += int64(v.LimitLapsed)
		for k, n := range v.LimitMax {
			limMax[k] = max(limMax[k], n)
		}
		for k, n := range v.LimitMaxAll {
			limMaxAll[k] = max(limMaxAll[k], n)
		}
		jobs += v.Jobs
		large += v.Large
		exhausted += v.Exhausted
		cronDead += v.CronDeadLettered
		overlaps += v.Overlaps
		edits += int(r.CronEdits)
		tooLarge += int(v.TooLarge)
		violations += len(v.Violations)
		kills += r.Kills
		pauses += r.Pauses + r.ExhaustPauses
		unkC += r.Faults.UnknownCommitted
		unkN += r.Faults.UnknownNotCommitted
		confl += r.Faults.Conflicts
		inCommit += r.Faults.TimedOutCommitted + r.Faults.TimedOutNotCommitted + r.Faults.CancelledCommitted + r.Faults.CancelledNotCommitted
		for _, s := range v.Violations {
			switch {
			case strings.Contains(s, "knew lost"), strings.Contains(s, "at once"), strings.Contains(s, "starts in"):
				// counted apart (LostStarts, limits)
			case strings.Contains(s, "duplicated"), strings.Contains(s, "must exist once"), strings.Contains(s, "created twice"), strings.Contains(s, "times (tokens"):
				dupJobs++
			case strings.Contains(s, "lost"):
				lost++
			case strings.Contains(s, "token"):
				stale++
			case strings.Contains(s, "is broken"):
				chains++
			case strings.Contains(s, "second successor"), strings.Contains(s, "completed twice"):
				doubled++
			}
		}
	}
	fmt.Fprintf(w, "totals over %d seeds: %d jobs (%d large, %d exhausted by a claim), %d kills, %d pauses, 1021 %d+%d, %d 1031/1025 in commit, %d injected conflicts, %d cron edits, %d cron occurrences dead-lettered with a successor\n",
		len(reps), jobs, large, exhausted, kills, pauses, unkC, unkN, inCommit, confl, edits, cronDead)
	fmt.Fprintf(w, "totals: %d batches (%d repeated IDs, %d generated), %d prefetched jobs cancelled (%d never started), %d prefetched starts refused, %d lanes stripped of their pointer (%d repaired)\n",
		batches, repeats, generated, cancelled, cancelledUnrun, refused, unpointed, repaired)
	if limitRuns > 0 {
		fmt.Fprintf(w, "totals: limits: %d runs of limited tenants, most at once %s (with the runs of frozen or killed holders: %s), %d runs cut as their holder froze or was killed\n",
			limitRuns, limitFigures(limMax), limitFigures(limMaxAll), lapsed)
	}
	if moves+adopts+deletes > 0 {
		fmt.Fprintf(w, "totals: %d tenant moves, %d adoptions, %d deletions, %d jobs moved or adopted, %d re-runs of jobs leased at a move's fence\n",
			moves, adopts, deletes, moved, reruns)
	}
	fmt.Fprintf(w, "totals: %d lost jobs, %d stale-token writes, %d duplicated jobs, %d doubled starts for a lease known lost, %d broken and %d doubled cron chains, %d oversized transactions, %d overlaps; %d violations in all\n",
		lost, stale, dupJobs, lostStarts, chains, doubled, tooLarge, overlaps, violations)
}

// firstKinds are producer 0's first jobs, one of each special kind (those
// whose share is 0 in a run are skipped over: that job is drawn at
// random).
var firstKinds = []struct {
	kind  string
	share func(Config) float64
}{
	{KindExhaust, func(c Config) float64 { return c.ExhaustShare }},
	{KindLarge, func(c Config) float64 { return c.LargeShare }},
	{KindPoison, func(c Config) float64 { return c.PoisonShare }},
	{KindSlow, func(c Config) float64 { return c.SlowShare }},
	{KindCheckpoint, func(c Config) float64 { return c.CheckpointShare }},
	{KindRequeue, func(c Config) float64 { return c.RequeueShare }},
}

// limitFigures formats the most runs at once by limit: "L=1: 1, L=5: 5".
func limitFigures(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: %d", k, m[k]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// enqueueTook counts one producer enqueue call of duration d.
func (h *harness) enqueueTook(d time.Duration) {
	h.enqueues.Add(1)
	if d > time.Second {
		h.slowEnqueues.Add(1)
	}
	for {
		old := h.slowestEnqueue.Load()
		if int64(d) <= old || h.slowestEnqueue.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// loadAvg is the first three fields of /proc/loadavg, or "n/a".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "n/a"
}
