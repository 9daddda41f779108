package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// Config configures a Worker. Only Queue is required.
type Config struct {
	Queue *quick.Queue
	// ID names the worker in leases and in its presence record
	// (ListWorkers); unique per process. Default host-pid-random.
	ID string
	// Clock is the worker's time. Default the queue's clock
	// (quick.Queue.Options().Clock), so leases and sleeps agree.
	Clock  clock.Clock
	Logger *slog.Logger
	// MeterProvider receives the worker's metrics. Default noop.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per run of a handler, linked to the
	// span its job was enqueued under (tracing.go). Default none: no span
	// is built.
	TracerProvider trace.TracerProvider
	// TraceAsChild makes a run's span a child of its job's enqueue span,
	// in that trace, instead of the root of a new trace linked to it.
	TraceAsChild bool
	// HeartbeatPeriod is how often the worker writes its presence record
	// (ListWorkers; counted gone after 3 periods without one) and how the
	// clock check paces its samples (clockguard.go). Default 1s.
	HeartbeatPeriod time.Duration
	// ShutdownTimeout is how long running jobs get to finish on Stop before
	// their contexts are cancelled and their jobs released. Default 10s.
	ShutdownTimeout time.Duration
	// MaxIdleSleep bounds one idle sleep of a claim loop. Default 5s.
	MaxIdleSleep time.Duration
	// DisableWake turns off FDB watch wake-ups: idle claim loops only poll.
	DisableWake bool
	// DefaultConcurrency is the Concurrency of handlers registered with
	// none. Default 10.
	DefaultConcurrency int
	// Duties are background duties this worker shares with the others
	// (see Duty), besides the built-in cleanup duties and those added with
	// AddDuty.
	Duties []Duty
	// NoBuiltinDuties turns off the built-in cleanup duties (purging
	// enqueue markers and dead letters beyond the queue's DeadRetention).
	NoBuiltinDuties bool
	// DisableDuties turns off every background duty of this worker; the
	// other workers still run them.
	DisableDuties bool
	// Cluster names the cluster this worker's queue is on; a Group sets it
	// (cluster.go). It labels the worker's metrics ("cluster"), events and
	// presence record. Default none.
	Cluster string
	// ClaimTimeout bounds one claim on the worker clock: a claim that
	// outlives it fails and backs off, its slots free. Default none for a
	// worker on its own, DefaultGroupClaimTimeout in a Group.
	ClaimTimeout time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Queue == nil {
		return c, fmt.Errorf("%w: Config.Queue is nil", ErrInvalidConfig)
	}
	if c.ID == "" {
		c.ID = defaultID()
	}
	if err := validClusterName(c.Cluster); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = c.Queue.Options().Clock
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.HeartbeatPeriod <= 0 {
		c.HeartbeatPeriod = time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.MaxIdleSleep <= 0 {
		c.MaxIdleSleep = 5 * time.Second
	}
	if c.DefaultConcurrency <= 0 {
		c.DefaultConcurrency = 10
	}
	return c, nil
}

// defaultID is host-pid-random: readable in listings, unique across restarts.
func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Worker runs handlers per task type against a queue. Register handlers,
// then Run.
type Worker struct {
	cfg Config
	q   *quick.Queue
	clk clock.Clock
	log *slog.Logger
	met *metrics
	// tracer makes the runs' spans; nil without Config.TracerProvider.
	tracer trace.Tracer

	mu      sync.Mutex
	runners []*runner
	byType  map[string]*runner
	started bool

	// bg carries every operation of the worker; only kill and the end of a
	// shutdown cancel it, so a graceful stop never aborts a commit midway.
	bg       context.Context
	bgCancel context.CancelFunc
	stopCh   chan struct{} // closed when a graceful stop begins
	stopOnce sync.Once
	killCh   chan struct{}
	killOnce sync.Once
	killed   atomic.Bool
	done     chan struct{} // closed when Run has returned
	loops    sync.WaitGroup
	// loopsStarted is closed once Run has started every loop (or returned
	// without): kill waits for it before loops.Wait, since a WaitGroup's Add
	// must not race its Wait.
	loopsStarted     chan struct{}
	loopsStartedOnce sync.Once
	runErr           error

	// jobDone is signalled whenever a handler returns, for shutdown.
	jobDone chan struct{}

	acker  *acker
	keeper *keeper
	stats  statCounters

	zclock    *zclock   // the clock check (clockguard.go)
	presence  *presence // this worker's presence record (presence.go)
	duties    []Duty    // guarded by mu until Run
	dutyState park      // the duty loop's sleep, for tests (quiet)
	pause     pauses    // paused task types (pause.go)
	events    eventHub  // job event subscriptions (events.go)
}

// New returns a worker for cfg.Queue. It writes nothing until Run.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:     cfg,
		q:       cfg.Queue,
		clk:     cfg.Clock,
		log:     cfg.Logger.With("worker", cfg.ID),
		byType:  map[string]*runner{},
		stopCh:  make(chan struct{}),
		killCh:  make(chan struct{}),
		done:    make(chan struct{}),
		jobDone: make(chan struct{}, 1),

		loopsStarted: make(chan struct{}),
	}
	w.bg, w.bgCancel = context.WithCancel(context.Background())
	w.met, err = newMetrics(w, cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if cfg.TracerProvider != nil {
		w.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	w.acker = newAcker(w)
	w.zclock = newZclock(w)
	w.presence = newPresence(w)
	w.keeper = newKeeper(w)
	for _, d := range cfg.Duties {
		if err := w.AddDuty(d); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// ID returns the worker's ID, the holder name of its leases.
func (w *Worker) ID() string { return w.cfg.ID }

// Queue returns the worker's queue.
func (w *Worker) Queue() *quick.Queue { return w.q }

// Clock returns the worker's clock.
func (w *Worker) Clock() clock.Clock { return w.clk }

// TaskTypes returns the registered task types, in registration order.
func (w *Worker) TaskTypes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.runners))
	for i, r := range w.runners {
		out[i] = r.taskType
	}
	return out
}

func (w *Worker) register(taskType string, opts HandlerOptions, exec execFunc) error {
	if err := quickTaskType(taskType); err != nil {
		return err
	}
	opts, err := opts.withDefaults(w)
	if err != nil {
		return fmt.Errorf("register %s: %w", taskType, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("register %s: %w", taskType, ErrStarted)
	}
	if w.byType[taskType] != nil {
		return fmt.Errorf("%w: a handler for %q is already registered", ErrInvalidConfig, taskType)
	}
	r := newRunner(w, taskType, opts, exec)
	w.runners = append(w.runners, r)
	w.byType[taskType] = r
	return nil
}

func quickTaskType(t string) error {
	if t == "" || len(t) > quick.MaxTaskTypeLen {
		return fmt.Errorf("%w: task type %q (want 1 to %d bytes)", ErrInvalidConfig, t, quick.MaxTaskTypeLen)
	}
	return nil
}

func (w *Worker) snapshotRunners() []*runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*runner(nil), w.runners...)
}

// stopping reports whether a graceful stop (or a kill) has begun.
func (w *Worker) stopping() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return w.killed.Load()
	}
}

// Run runs the worker until ctx is done or Stop is called, then shuts down
// gracefully. It returns nil after a clean shutdown, ErrKilled after a
// simulated crash (tests and demos only), and otherwise what went wrong while
// shutting down (acks that could not be flushed). A presence record it could
// not clear is logged only: it goes stale and is purged.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return ErrStarted
	}
	w.started = true
	runners := append([]*runner(nil), w.runners...)
	w.mu.Unlock()
	defer close(w.done)
	// After every ack: a subscriber's range loop ends with the worker.
	defer w.events.close()
	defer w.markLoopsStarted()
	if len(runners) == 0 {
		return fmt.Errorf("%w: no handler registered", ErrInvalidConfig)
	}
	if w.stopping() {
		return nil
	}
	w.log.Info("worker: starting", "task_types", w.TaskTypes())
	w.loop(w.acker.run)
	w.loop(w.keeper.run)
	w.loop(w.pauseLoop)
	w.presence.started = w.clk.Now()
	w.zclock.setLimit(clockLimit(w.q, runners))
	w.loop(w.zclock.run)
	for _, r := range runners {
		w.loop(r.shorts.run)
		for i := range r.zparks {
			r.zloops.Add(1)
			w.loop(func() { r.claimLoop(i) })
		}
	}
	w.loop(w.dutyLoop)
	w.markLoopsStarted()
	select {
	case <-ctx.Done():
		w.beginStop()
	case <-w.stopCh:
	case <-w.killCh:
	}
	if w.killed.Load() {
		w.loops.Wait()
		return ErrKilled
	}
	w.runErr = w.shutdown(runners)
	if w.killed.Load() {
		return ErrKilled
	}
	return w.runErr
}

func (w *Worker) loop(f func()) {
	w.loops.Add(1)
	go func() {
		defer w.loops.Done()
		f()
	}()
}

func (w *Worker) markLoopsStarted() { w.loopsStartedOnce.Do(func() { close(w.loopsStarted) }) }

func (w *Worker) beginStop() { w.stopOnce.Do(func() { close(w.stopCh) }) }

// Stop shuts the worker down gracefully and waits until it has (or ctx is
// done). It is idempotent and safe to call from any goroutine; before Run it
// makes Run return at once.
func (w *Worker) Stop(ctx context.Context) error {
	w.beginStop()
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-w.done:
		if w.killed.Load() {
			return ErrKilled
		}
		return w.runErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kill stops everything at once, as a crash would: no release, no ack
// flush, no presence clear. Handler contexts are cancelled and whatever
// they return is dropped; their jobs stay leased until their leases lapse
// and another worker takes them. kill waits for the worker's own loops to
// exit (not for handlers), so nothing it does afterwards writes to the
// database except a commit that was already in flight. Tests and demos
// reach it through internal/testhooks.KillWorker; no production code should
// crash a worker on purpose.
func (w *Worker) kill() {
	w.killed.Store(true)
	w.bgCancel()
	w.killOnce.Do(func() { close(w.killCh) })
	w.beginStop()
	for _, r := range w.snapshotRunners() {
		r.waker.close()
		for _, st := range r.runningJobs() {
			st.cancel(ErrKilled)
		}
	}
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		// A Run that has begun starts its loops (or returns) promptly:
		// they see the kill and exit.
		<-w.loopsStarted
	}
	w.loops.Wait()
}

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

func (w *Worker) signalJobDone() {
	select {
	case w.jobDone <- struct{}{}:
	default:
	}
}

// running counts the handlers still running across task types.
func (w *Worker) running() int {
	n := 0
	for _, r := range w.snapshotRunners() {
		n += len(r.runningJobs())
	}
	return n
}

// shutdown is the graceful stop: stop claiming, let handlers finish within
// ShutdownTimeout, release the rest, flush acks, wake the other workers,
// clear the presence record.
func (w *Worker) shutdown(runners []*runner) error {
	log := w.log
	log.Info("worker: stopping", "running", w.running(), "shutdown_timeout", w.cfg.ShutdownTimeout)
	// Claim loops exit after any claim in flight; a claim is never cut
	// short, since a cancelled commit could leave leases nobody runs.
	released := map[*runner]int{}
	for _, r := range runners {
		r.zloops.Wait()
		// Claimed jobs still waiting for a handler slot go back now.
		if n := r.dropWaiting(); n > 0 {
			released[r] += n
		}
	}
	timer := w.clk.After(w.cfg.ShutdownTimeout)
wait:
	for w.running() > 0 {
		select {
		case <-w.jobDone:
		case <-timer:
			break wait
		case <-w.killCh:
			return ErrKilled
		}
	}
	for _, r := range runners {
		for _, st := range r.runningJobs() {
			if st.abandon() {
				released[r]++
			}
		}
	}
	ctx, cancel := context.WithTimeout(w.bg, 30*time.Second)
	defer cancel()
	var errs []error
	if err := w.acker.flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("worker: flushing acks: %w", err))
	}
	w.keeper.stop()
	for _, r := range runners {
		// After the flush: a short lane goes back only once the acks of
		// its jobs are in (short.go).
		r.shorts.stop()
		r.shorts.handBackAll()
	}
	for r, n := range released {
		log.Info("worker: released running jobs", "task_type", r.taskType, "jobs", n)
		if err := r.waker.bump(ctx); err != nil {
			log.Warn("worker: could not wake other workers for released jobs", "task_type", r.taskType, "err", err)
		}
	}
	// The clock loop's last round may still be in flight (it began before
	// the stop) with the presence record and the throughput counts not yet
	// known committed: beside the stop's transaction, both would add those
	// counts (the fleet's minutes counted them twice), and the record could
	// be set again after the clear. The loop exits after that round.
	select {
	case <-w.zclock.done:
	case <-ctx.Done():
	}
	// The presence record is advisory: one left behind goes stale and the
	// purge-presence duty clears it, so a clear that fails (the database
	// busy or recovering at the stop) is logged, not a failed shutdown.
	if err := w.presence.stop(ctx); err != nil {
		log.Warn("worker: could not clear the presence record; it goes stale and is purged", "err", err)
	}
	for _, r := range runners {
		r.waker.close()
	}
	w.acker.stop()
	w.bgCancel()
	w.loops.Wait()
	err := errors.Join(errs...)
	if err != nil {
		log.Warn("worker: stopped with errors", "err", err)
	} else {
		log.Info("worker: stopped")
	}
	return err
}

// Stats are the worker's counts since New.
type Stats struct {
	Claimed      int64 // jobs claimed
	Completed    int64 // jobs completed (acks and CompleteWith)
	Failed       int64 // failures acked (including those that exhausted their attempts)
	DeadLettered int64 // jobs dead-lettered (decode failures, exhausted attempts, DeadLetterWith)
	Cancelled    int64 // jobs their handlers cancelled (Cancel, CancelWith)
	Snoozed      int64
	Released     int64 // jobs handed back by a graceful stop or a stop during a claim
	LeaseLost    int64 // jobs whose lease this worker lost: not acked by it
	Panics       int64
	// Conflicts counts races lost to other transactions: operations that
	// surfaced a not_committed (1020) error, and leases lost because another
	// worker's claim took the job (token changed).
	Conflicts    int64
	ClaimBatches int64 // claim transactions that took at least one job
	EmptyClaims  int64 // claim transactions that took none
	AckBatches   int64 // quick.Ack calls made by the acker
	ClaimAcks    int64 // acks committed in a claim's transaction (quick.ClaimOptions.Acks)
	Extensions   int64 // ExtendMany calls made by the lease keeper
	Refused      int64 // claim rounds refused (stale heartbeat, clock skew)
	Wakeups      int64 // idle sleeps ended early by the wake watch
	AckErrors    int64 // acks that could not be committed (their leases will lapse)
	Running      int64 // handlers running now
	// EventsDropped counts job events lost to a subscriber's full buffer
	// (Subscribe).
	EventsDropped int64
}

type statCounters struct {
	claimed, completed, failed, deadLettered, snoozed, released, leaseLost, panics, conflicts atomic.Int64
	claimBatches, emptyClaims, ackBatches, extensions, refused, wakeups, ackErrors            atomic.Int64
	cancelled, claimAcks                                                                      atomic.Int64
}

// Stats returns the worker's counts.
func (w *Worker) Stats() Stats {
	s := &w.stats
	return Stats{
		Claimed: s.claimed.Load(), Completed: s.completed.Load(), Failed: s.failed.Load(),
		DeadLettered: s.deadLettered.Load(), Snoozed: s.snoozed.Load(), Released: s.released.Load(),
		LeaseLost: s.leaseLost.Load(), Panics: s.panics.Load(), Conflicts: s.conflicts.Load(),
		ClaimBatches: s.claimBatches.Load(), EmptyClaims: s.emptyClaims.Load(), AckBatches: s.ackBatches.Load(), ClaimAcks: s.claimAcks.Load(),
		Extensions: s.extensions.Load(), Refused: s.refused.Load(), Wakeups: s.wakeups.Load(),
		AckErrors: s.ackErrors.Load(), Running: int64(w.running()), Cancelled: s.cancelled.Load(),
		EventsDropped: w.events.dropped.Load(),
	}
}
