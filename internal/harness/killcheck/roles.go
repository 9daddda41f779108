package killcheck

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
	"github.com/quickfdb/quickfdb/workermain"
)

// Lanes is the lanes of a run's queue: few, so that a killed worker's
// lanes are taken over soon and both workers are busy.
const Lanes = 4

// Layout is the queue layout a run's processes use.
type Layout string

const (
	// LayoutZones is the queue's one layout, with per-job leases.
	LayoutZones Layout = "zones"
	// LayoutShort is the zones layout with TaskType in short-job mode.
	LayoutShort Layout = "short"
)

// ParseLayout checks a -layout flag's value.
func ParseLayout(s string) (Layout, error) {
	switch l := Layout(s); l {
	case LayoutZones, LayoutShort:
		return l, nil
	}
	return "", fmt.Errorf("killcheck: unknown layout %q (want zones or short)", s)
}

// QueueOptions are the options every process of a run opens the queue
// with: Lanes lanes per zone, TaskType in short-job mode for LayoutShort
// (TaskTypeOptions.ShortJobs). TaskType keeps its lookup index (the
// default), so that the checker's Get finds a job still queued.
func QueueOptions(l Layout) quick.Options {
	o := quick.Options{ZoneLanes: Lanes, MaxZoneLanes: Lanes}
	if l == LayoutShort {
		o.TaskTypes = map[string]quick.TaskTypeOptions{TaskType: {ShortJobs: true}}
		// One lane, never grown or split: the short-batch scenario needs
		// the whole batch in the lane that one worker leases. Over Lanes
		// lanes the two workers each leased some, and the batch was split.
		o.ZoneLanes, o.MaxZoneLanes = 1, 1
	}
	return o
}

// Spaces are a run's subspaces: the queue's and the app's records.
func Spaces(run tuple.Subspace) (queue tuple.Subspace, keys Keys) {
	return run.Sub("queue"), Keys{App: run.Sub("app")}
}

// lineWriter writes whole lines to w, one goroutine at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) emit(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, e.String())
}

// openRole parses a role's flags (workermain's, plus add's) and opens the
// run's database and queue.
func openRole(ctx context.Context, name string, args []string, stderr io.Writer, add func(*flag.FlagSet)) (*workermain.Flags, kv.Database, *quick.Queue, Keys, *slog.Logger, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &workermain.Flags{}
	f.Register(fs)
	layout := fs.String("queue-layout", string(LayoutZones), "the queue's mode: zones (per-job leases), or short (the task type in short-job mode; QueueOptions)")
	if add != nil {
		add(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, Keys{}, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, Keys{}, nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, nil, nil, Keys{}, nil, fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	db, run, err := f.Open()
	if err != nil {
		return nil, nil, nil, Keys{}, nil, err
	}
	qs, keys := Spaces(run)
	l, err := ParseLayout(*layout)
	if err != nil {
		return nil, nil, nil, Keys{}, nil, err
	}
	qo := QueueOptions(l)
	qo.Logger = log
	q, err := quick.Open(ctx, db, qs, qo)
	if err != nil {
		return nil, nil, nil, Keys{}, nil, fmt.Errorf("open the queue: %w", err)
	}
	return f, db, q, keys, log, nil
}

// WorkerMain is the worker role: it runs the Steps handler until SIGINT
// or SIGTERM and reports events on stdout.
func WorkerMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var hangShort bool
	f, db, q, keys, log, err := openRole(ctx, "worker", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&hangShort, "hang-short", false, "block the first attempt of every job handed out under a short-job lane lease until the process is killed (Handler.HangShort)")
	})
	if err != nil {
		return err
	}
	defer closeDB(db)
	w, err := worker.New(worker.Config{Queue: q, ID: f.ID, Logger: log, ShutdownTimeout: f.ShutdownTimeout, DefaultConcurrency: f.Concurrency})
	if err != nil {
		return err
	}
	out := &lineWriter{w: stdout}
	h := &Handler{Keys: keys, Clock: clock.Real(), Emit: out.emit, HangShort: hangShort}
	if err := h.Register(w, worker.HandlerOptions{Lease: quick.MinLease}); err != nil {
		return err
	}
	out.emit(Event{Kind: EventReady, Worker: w.ID()})
	err = w.Run(ctx)
	log.Info("killcheck worker: exiting", "stats", fmt.Sprintf("%+v", w.Stats()))
	return err
}

// ProduceMain is the producer role: it inserts the jobs and reports each
// on stdout.
func ProduceMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var n, steps, hangAt int
	var stepTime time.Duration
	_, db, q, keys, _, err := openRole(ctx, "produce", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&n, "jobs", 10, "jobs to insert")
		fs.IntVar(&steps, "steps", 8, "steps per job")
		fs.DurationVar(&stepTime, "step-time", 500*time.Millisecond, "duration of one step")
		fs.IntVar(&hangAt, "hang-at", 0, "the first job's first attempt blocks after checkpointing this step (0: none)")
	})
	if err != nil {
		return err
	}
	defer closeDB(db)
	if n < 1 || n > MaxJobs || steps < 1 || hangAt < 0 || hangAt >= steps {
		return fmt.Errorf("want 1 <= -jobs <= %d, -steps >= 1, 0 <= -hang-at < -steps", MaxJobs)
	}
	jobs := make([]Steps, n)
	for i := range jobs {
		jobs[i] = Steps{Seq: i, N: steps, StepMs: stepTime.Milliseconds()}
	}
	jobs[0].HangAt = hangAt
	ids, err := Produce(ctx, q, keys, jobs)
	out := &lineWriter{w: stdout}
	for _, id := range ids {
		out.emit(Event{Kind: EventEnqueued, Job: id})
	}
	return err
}

func closeDB(db kv.Database) {
	if c, ok := db.(io.Closer); ok {
		_ = c.Close()
	}
}
