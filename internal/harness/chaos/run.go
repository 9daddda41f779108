package chaos

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/internal/harness/pages"
	"github.com/quickfdb/quickfdb/internal/harness/procbench"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/workermain"
)

// Env is where a run happens: the database the run's own process uses
// (producers, the drain, the checker), how worker children start (each
// with WorkerArgs.Flags() as its command line; procbench.Exec for
// processes), and the fault schedule.
type Env struct {
	DB          kv.Database
	ClusterFile string // passed to the workers
	Spawn       procbench.Spawner
	Faults      []Fault
	// Engine names the database for the report.
	Engine string
	Log    io.Writer
}

// Report is a run's outcome.
type Report struct {
	Config  Config     `json:"config"`
	Engine  string     `json:"engine"`
	Run     string     `json:"run"` // the run's subspace
	Faults  []FaultRec `json:"faults"`
	Verdict Verdict    `json:"verdict"`
}

// Run runs one chaos run and checks it. An error is returned only when
// the run could not be made; a run whose checks fail returns a Report
// whose Verdict lists the violations.
func Run(ctx context.Context, cfg Config, env Env) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if env.Spawn == nil || env.DB == nil {
		return nil, errNoSpawn
	}
	logw := env.Log
	if logw == nil {
		logw = io.Discard
	}
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(logw, "[%6.1fs] chaos: %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	sub := cfg.Subspace + ",r" + hex.EncodeToString(b[:])
	root, err := workermain.ParseSubspace(sub)
	if err != nil {
		return nil, err
	}
	qs, keys := Spaces(root)
	edb := CountErrors(env.DB)
	q, err := quick.Open(ctx, edb, qs, QueueOptions())
	if err != nil {
		return nil, fmt.Errorf("chaos: open the queue: %w", err)
	}
	rep := &Report{Config: cfg, Engine: env.Engine, Run: sub}
	if !cfg.Keep {
		defer clearRun(env.DB, root, logf)
	}
	for i := range cfg.CronChains {
		s := cron.Schedule{Name: fmt.Sprintf("chain-%d", i), Spec: cfg.CronSpec, TaskType: TypeCron}
		if err := cron.Register(ctx, q, s); err != nil {
			return nil, fmt.Errorf("chaos: register cron chain %d: %w", i, err)
		}
	}

	r := &runner{cfg: cfg, env: env, logf: logf, workerCodes: map[string]map[int]int64{}}
	defer r.killAll()
	for i := range cfg.Workers {
		a := WorkerArgs{ClusterFile: env.ClusterFile, Subspace: sub, ID: fmt.Sprintf("w%d", i+1), Concurrency: cfg.Concurrency, LogLevel: "warn"}
		if err := r.startWorker(ctx, a); err != nil {
			return nil, err
		}
	}
	if err := r.waitReady(ctx, time.Minute); err != nil {
		return nil, err
	}
	logf("run subspace (%s); %d workers ready; %s", sub, cfg.Workers, env.Engine)

	start = time.Now()
	h := History{Start: start.UnixNano(), BaselineEnd: start.Add(cfg.Baseline).UnixNano()}
	prod := &producers{cfg: cfg, db: edb, q: q, keys: keys}
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	go stopWhenDone(pctx, stopProducers, start.Add(cfg.Baseline+cfg.Duration), cfg, prod)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); prod.run(pctx) }()
	go func() { defer wg.Done(); h.Faults = runFaults(pctx, cfg, env.Faults, start, logf) }()
	wg.Wait()
	batches := prod.all()
	logf("producers stopped after %d transactions; %d faults ran", len(batches), len(h.Faults))

	// The drain: every job of a committed batch must finish.
	if err := readMarkers(ctx, edb, keys, batches); err != nil {
		return nil, fmt.Errorf("chaos: read the batch markers: %w", err)
	}
	var expect int64
	for _, b := range batches {
		if b.Found {
			expect += int64(len(b.Marker))
		}
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	for {
		n, err := readTotal(dctx, edb, keys)
		if err == nil && n >= expect {
			logf("drained: %d jobs finished", n)
			break
		}
		if dctx.Err() != nil {
			h.Problems = append(h.Problems, fmt.Sprintf("drain: %d of %d jobs finished after %v (err %v)", n, expect, cfg.DrainTimeout, err))
			break
		}
		if dead := r.exited(); dead != "" {
			h.Problems = append(h.Problems, fmt.Sprintf("worker %s exited during the run", dead))
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.stopAll()
	h.Problems = append(h.Problems, r.problems()...)

	// The end state.
	if h.Records, err = readRecords(ctx, edb, keys); err != nil {
		return nil, fmt.Errorf("chaos: read the records: %w", err)
	}
	h.Queued, h.Dead = map[string][]quick.ID{}, map[string][]quick.ID{}
	for _, tt := range append(append([]string(nil), WorkTypes...), TypeCron) {
		if h.Queued[tt], err = pages.Queued(ctx, q, tt); err != nil {
			return nil, fmt.Errorf("chaos: list %s: %w", tt, err)
		}
		if h.Dead[tt], err = pages.Dead(ctx, q, tt); err != nil {
			return nil, fmt.Errorf("chaos: list the dead letters of %s: %w", tt, err)
		}
	}
	if h.Cron, err = readCron(ctx, q); err != nil {
		return nil, fmt.Errorf("chaos: list the cron chains: %w", err)
	}
	h.Batches, h.Events = batches, r.allEvents()
	h.Codes = edb.Codes()
	for _, c := range r.codes() {
		for code, n := range c {
			h.Codes[code] += n
		}
	}
	rep.Faults = h.Faults
	rep.Verdict = Check(h)
	return rep, nil
}

func clearRun(db kv.Database, root tuple.Subspace, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.PrefixRange(root.Bytes()))
		return nil
	})
	if err != nil {
		logf("could not clear the run's data: %v", err)
	}
}

// runner owns the worker children and what they report.
type runner struct {
	cfg  Config
	env  Env
	logf func(string, ...any)

	mu          sync.Mutex
	children    []*child
	events      []Event
	workerCodes map[string]map[int]int64
	bad         []string
}

type child struct {
	name     string
	c        procbench.Child
	ready    chan struct{}
	readDone chan struct{}
	stopping bool
}

func (r *runner) startWorker(ctx context.Context, a WorkerArgs) error {
	c, err := r.env.Spawn(ctx, a.ID, a.Flags())
	if err != nil {
		return fmt.Errorf("chaos: start worker %s: %w", a.ID, err)
	}
	ch := &child{name: a.ID, c: c, ready: make(chan struct{}), readDone: make(chan struct{})}
	r.mu.Lock()
	r.children = append(r.children, ch)
	r.mu.Unlock()
	go r.read(ch)
	return nil
}

// read follows a child's event lines until its output ends.
func (r *runner) read(ch *child) {
	defer close(ch.readDone)
	var once sync.Once
	sc := bufio.NewScanner(ch.c.Output())
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, err := ParseEvent(sc.Text())
		r.mu.Lock()
		switch {
		case err != nil:
			r.bad = append(r.bad, fmt.Sprintf("%s: %v", ch.name, err))
		case e.Kind == EvReady:
			once.Do(func() { close(ch.ready) })
		case e.Kind == EvStart || e.Kind == EvEnd:
			r.events = append(r.events, e)
		case e.Kind == EvErrs || e.Kind == EvExit:
			if codes, err := ParseCodes(e.Note); err != nil {
				r.bad = append(r.bad, fmt.Sprintf("%s: %v", ch.name, err))
			} else {
				r.workerCodes[ch.name] = codes
			}
		}
		r.mu.Unlock()
	}
}

func (r *runner) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.After(timeout)
	for _, ch := range r.snapshot() {
		select {
		case <-ch.ready:
		case <-ch.readDone:
			_, err := ch.c.Wait()
			return fmt.Errorf("chaos: worker %s exited before it was ready: %v", ch.name, err)
		case <-deadline:
			return fmt.Errorf("chaos: worker %s not ready after %v", ch.name, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *runner) snapshot() []*child {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*child(nil), r.children...)
}

// exited names a child that exited though nobody stopped it.
func (r *runner) exited() string {
	for _, ch := range r.snapshot() {
		select {
		case <-ch.readDone:
			if !ch.stopping {
				return ch.name
			}
		default:
		}
	}
	return ""
}

// stopAll stops every child with SIGTERM and waits for each.
func (r *runner) stopAll() {
	chs := r.snapshot()
	for _, ch := range chs {
		ch.stopping = true
		if err := ch.c.Stop(); err != nil {
			r.note("stop %s: %v", ch.name, err)
		}
	}
	for _, ch := range chs {
		select {
		case <-ch.readDone:
		case <-time.After(time.Minute):
			ch.c.Kill()
			<-ch.readDone
			r.note("worker %s did not stop within a minute of SIGTERM; killed", ch.name)
		}
		if _, err := ch.c.Wait(); err != nil {
			r.note("worker %s exited: %v", ch.name, err)
		}
	}
}

func (r *runner) killAll() {
	for _, ch := range r.snapshot() {
		select {
		case <-ch.readDone:
		default:
			ch.stopping = true
			ch.c.Kill()
		}
	}
}

func (r *runner) note(format string, args ...any) {
	r.mu.Lock()
	r.bad = append(r.bad, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *runner) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

func (r *runner) allEvents() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *runner) codes() []map[int]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[int]int64
	for _, c := range r.workerCodes {
		out = append(out, maps.Clone(c))
	}
	return out
}

// errNoSpawn is Run's error without a way to start workers.
var errNoSpawn = errors.New("chaos: Env needs a DB and a Spawn")

// stopWhenDone stops the producers and faults at end, or past it once they
// have attempted cfg.MinBatches transactions, or at end+cfg.MaxOvertime,
// whichever comes first after end.
func stopWhenDone(ctx context.Context, stop context.CancelFunc, end time.Time, cfg Config, prod *producers) {
	defer stop()
	last := end.Add(max(cfg.MaxOvertime, 0))
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if prod.count() >= cfg.MinBatches || !now.Before(last) {
			return
		}
		t.Reset(min(100*time.Millisecond, last.Sub(now)))
	}
}
