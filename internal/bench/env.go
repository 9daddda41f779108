package bench

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// env is one run's world: a queue opened three times on the same subspace,
// each handle over its own counting wrapper, so enqueue, claim and ack
// costs (and claim conflicts) are counted apart.
type env struct {
	cfg      Config
	taskType string
	space    tuple.Subspace
	lanes    int

	enqDB, claimDB, ackDB *kv.CountedDB
	qEnq, qClaim, qAck    *quick.Queue

	metas sync.Map // quick.ID -> *jobMeta
	// shared, when set, is the meta of every job not in metas: the big
	// tenant's backlog of the tenants run, whose million jobs are not
	// tracked one by one.
	shared *jobMeta
	waits  waits

	violMu     sync.Mutex
	violations []string
}

// jobMeta is what the harness knows of a logical job. Failed jobs of the
// delete recipe come back under a new ID that maps to the same meta.
type jobMeta struct {
	enq     time.Time
	vest    atomic.Int64 // unix ns when the job (last) vested
	delayed bool
	dur     time.Duration
	fail    bool // first attempt fails
	space   string
	shared  bool // stands for many jobs: not checked for double starts
	failed  atomic.Bool
	starts  atomic.Int32
	done    atomic.Int32
}

func openEnv(ctx context.Context, db kv.Database, space tuple.Subspace, cfg Config, tune func(*quick.Options)) (*env, error) {
	e := &env{cfg: cfg, taskType: "bench", space: space,
		enqDB: kv.WithCounters(db), claimDB: kv.WithCounters(db), ackDB: kv.WithCounters(db)}
	opts := quick.Options{
		Backoff: func(int) time.Duration { return cfg.RetryDelay },
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	tune(&opts)
	var err error
	for _, p := range []struct {
		q  **quick.Queue
		db kv.Database
	}{{&e.qEnq, e.enqDB}, {&e.qClaim, e.claimDB}, {&e.qAck, e.ackDB}} {
		if *p.q, err = quick.Open(ctx, p.db, space, opts); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *env) violate(s string) {
	e.violMu.Lock()
	defer e.violMu.Unlock()
	if len(e.violations) < 20 {
		e.violations = append(e.violations, s)
	}
}

func (e *env) meta(id quick.ID) *jobMeta {
	v, ok := e.metas.Load(id)
	if !ok {
		return e.shared
	}
	return v.(*jobMeta)
}

// workload draws jobs; each producer has its own, seeded, so every variant
// sees the same sequence of durations, delays and failures.
type workload struct {
	cfg  Config
	rng  *rand.Rand
	fair *fairSpec
}

func newWorkload(cfg Config, stream uint64, fair *fairSpec) *workload {
	return &workload{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, stream)), fair: fair}
}

// next returns a job to enqueue now and its meta.
func (w *workload) next(now time.Time, payload []byte) (quick.NewJob, *jobMeta) {
	m := &jobMeta{enq: now, dur: w.cfg.Duration.Draw(w.rng)}
	nj := quick.NewJob{ID: quick.NewID(now), TaskType: "bench", Payload: payload}
	if w.rng.Float64() < w.cfg.DelayShare && w.cfg.MaxDelay > 0 {
		nj.Delay = time.Duration(1 + w.rng.Int64N(int64(w.cfg.MaxDelay)))
		m.delayed = true
	}
	m.fail = w.rng.Float64() < w.cfg.FailShare
	if f := w.fair; f != nil {
		m.space = f.pick(w.rng)
		if w.rng.Float64() < f.slowShare {
			m.dur = f.slow
		}
		nj.ItemSpace = m.space
	}
	m.vest.Store(now.Add(nj.Delay).UnixNano())
	return nj, m
}

// reenqueue puts a failed job of the delete recipe back as a new job after
// the retry delay, under the same meta.
func (e *env) reenqueue(ctx context.Context, old quick.ID) error {
	m := e.meta(old)
	now := time.Now()
	nj := quick.NewJob{ID: quick.NewID(now), TaskType: e.taskType, Payload: make([]byte, e.cfg.Payload), Delay: e.cfg.RetryDelay}
	if m != nil {
		nj.ItemSpace = m.space
		e.metas.Store(nj.ID, m)
	}
	_, err := e.qEnq.Enqueue(ctx, nj)
	return err
}

type quickJob = quick.NewJob
