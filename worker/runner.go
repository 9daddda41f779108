package worker

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/leasetoken"
	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// runner runs one task type: its claim loops (claim.go), its short lanes
// (short.go), waker (waker.go), and the goroutines of its handlers.
type runner struct {
	w        *Worker
	taskType string
	opts     HandlerOptions
	exec     execFunc
	waker    *waker

	mu sync.Mutex
	// running holds every run of this task type's handler in progress, by
	// run: a job's ID and the token of the claim that started the run. One
	// worker can run the same job twice at once: if its renewals failed past
	// the lease, its own claim may take the job again while the first
	// handler still runs. The runs are separate leases, each renewed,
	// cancelled, counted and cleaned up on its own.
	running map[runKey]*jobState

	slotFreed chan struct{} // a handler returned
	// beatCh (under mu) is closed when the clock check or the pause read
	// changed: every refusing claim loop looks again (a broadcast; a
	// one-slot channel woke only one of them, and the rest slept a whole
	// heartbeat period).
	beatCh chan struct{}

	// The claim loops (claim.go, short.go).
	reserved int           // under mu: slots reserved by claims in flight
	slotCh   chan struct{} // under mu: closed when a slot frees
	moreCh   chan struct{} // under mu: closed when a claim suggests more work
	zparks   []park        // one per claim goroutine
	zloops   sync.WaitGroup
	refusal  string // the claims' refusal now, for logging changes
	shorts   *shortLanes
	feed     *scanFeed // the scanner's hand-over to the executors (scanner.go)
	// active counts the handler goroutines (at most Concurrency); waiting
	// are the claimed runs (in running) that wait for one (capacity).
	active  int
	waiting []*jobState
	// shortStarts counts the runs started under a short lane.
	shortStarts atomic.Int64
	// share is the runner's part of its task type's slots in a Group
	// (slotshare.go); nil for a worker on its own.
	share *shareMember
	// failing counts the claim goroutines whose last claim failed: a
	// runner whose claims fail is never pressed for more slots.
	failing atomic.Int32

	attrOnce sync.Once
	attrSet  metric.MeasurementOption
}

func newRunner(w *Worker, taskType string, opts HandlerOptions, exec execFunc) *runner {
	r := &runner{
		w: w, taskType: taskType, opts: opts, exec: exec,
		running:   map[runKey]*jobState{},
		slotFreed: make(chan struct{}, 1),
	}
	r.waker = newWaker(r)
	r.zparks = make([]park, claimersFor(opts.Concurrency))
	r.shorts = newShortLanes(r)
	r.feed = newScanFeed()
	return r
}

// runKey names one run of a job: its ID and its claim's lease token. A
// renewal or checkpoint keeps the token, so the key holds for the whole run.
type runKey struct {
	id    quick.ID
	token uint64
}

func keyOf(l quick.Lease) runKey {
	if mutant.On("worker.run-by-id") {
		// Deliberate break (internal/mutant): runs keyed by job ID alone.
		return runKey{id: l.ID}
	}
	return runKey{id: l.ID, token: leasetoken.Of(l)}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (r *runner) runningJobs() []*jobState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*jobState, 0, len(r.running))
	for _, st := range r.running {
		out = append(out, st)
	}
	return out
}

func (r *runner) free() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.capacity() - len(r.running) - r.reserved
}

// capacity is how many claimed runs the runner holds at most: Concurrency
// handlers, and as many more claimed jobs waiting for a
// handler slot (prefetch). A claim then runs while every slot is busy, so
// the handlers never wait on a claim's round trips: under FDB latencies a
// claim takes about 8 ms, and without prefetch a worker of 100 slots drains
// at most 100 jobs per claim round trip (6,000 jobs/s measured), each claim
// taking the slots the one before it left free. The jobs waiting hold
// leases the keeper renews (or their lane's, in short-job mode), and a stop
// releases them at once.
func (r *runner) capacity() int { return 2 * r.conc() }

// start runs a claimed job's handler in its own goroutine.
func (r *runner) start(l quick.Lease) { r.startWith(l, nil) }

// startWith is start for a job handed out under the short lane sl (nil: a
// per-job lease).
func (r *runner) startWith(l quick.Lease, sl *shortLane) {
	w := r.w
	st := r.newState(l)
	now := st.claimed
	if sl != nil {
		st.lane = sl
		sl.addJob(st)
		r.shortStarts.Add(1)
	}
	r.mu.Lock()
	r.running[keyOf(l)] = st
	launch := r.launchSlot()
	if launch {
		r.active++
	} else {
		r.waiting = append(r.waiting, st)
	}
	r.mu.Unlock()
	w.count(r, kindClaimed, 1)
	w.presence.ts.count(r.taskType, l.ItemSpace) // start rate per tenant (tenantstarts.go)
	w.met.vestedToStart(r, now.Sub(l.VestedAt))
	w.keeper.kick()
	if launch {
		go r.runJob(st)
	}
}

// dropWaiting hands back the claimed jobs still waiting for a handler slot
// (a stop): they never start.
func (r *runner) dropWaiting() int {
	r.mu.Lock()
	ws := r.waiting
	r.waiting = nil
	for _, st := range ws {
		if k := keyOf(st.first); r.running[k] == st {
			delete(r.running, k)
		}
	}
	r.signalSlotsLocked()
	r.mu.Unlock()
	n := 0
	for _, st := range ws {
		if st.abandon() {
			n++
		}
	}
	return n
}

func (r *runner) newState(l quick.Lease) *jobState {
	st := &jobState{r: r, first: l, lease: l, claimed: r.w.clk.Now()}
	st.ctx, st.cancel = context.WithCancelCause(context.Background())
	return st
}

func (r *runner) runJob(st *jobState) {
	defer func() {
		r.mu.Lock()
		// Only this run's entry: another run of the same job has its own.
		if k := keyOf(st.first); r.running[k] == st {
			delete(r.running, k)
		}
		// The slot goes to the next claimed job waiting for one (in a
		// Group, if the runner's share still has it: slotshare.go).
		var next *jobState
		keep, grown := r.slotDone(len(r.waiting) > 0 && !r.w.killed.Load())
		if keep {
			next = r.waiting[0]
			r.waiting[0] = nil
			r.waiting = r.waiting[1:]
		} else {
			r.active--
		}
		r.signalSlotsLocked()
		r.mu.Unlock()
		r.deliverGrants(grown)
		st.cancel(context.Canceled)
		if next != nil {
			go r.runJob(next)
		}
		notify(r.slotFreed)
		r.w.signalJobDone()
	}()
	if why := st.notStartable(); why != nil {
		// A prefetched job waited for a slot while its lease was lost
		// (cancelled, or its lane taken over): another worker may run it
		// now, so running it here would double the run.
		r.w.log.Warn("worker: not starting a prefetched job", "task_type", r.taskType, "id", st.first.ID, "why", why)
		return
	}
	ctx := st.ctx
	if d := r.opts.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = r.withTimeout(ctx, d)
		defer cancel()
	}
	st.started = r.w.clk.Now()
	ctx = st.startSpan(ctx)
	err := r.call(ctx, st)
	st.returned = r.w.clk.Now()
	st.settle(err)
	if r.w.tracer != nil {
		st.mu.Lock()
		st.endSpanAfterRunLocked()
		st.mu.Unlock()
	}
}

// withTimeout bounds a handler on the worker clock. On the real clock that
// is a context deadline; on another clock (a test's Fake) a sleeper on it
// cancels the context, so the deadline moves with that clock.
func (r *runner) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if r.w.clk == clock.Real() {
		return context.WithTimeoutCause(parent, d, ErrHandlerTimeout)
	}
	ctx, cancel := context.WithCancelCause(parent)
	fired := r.w.clk.After(d)
	go func() {
		select {
		case <-fired:
			cancel(ErrHandlerTimeout)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// call runs the handler, turning a panic into a failure that carries the
// stack, so the job's LastError shows where it broke.
func (r *runner) call(ctx context.Context, st *jobState) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.w.count(r, kindPanic, 1)
			err = fmt.Errorf("%w: %v\n%s", ErrPanic, p, panicStack())
			r.w.log.Error("worker: handler panicked", "task_type", r.taskType, "id", st.first.ID, "panic", p)
		}
	}()
	return r.exec(ctx, st)
}

// panicStack is the stack from the panicking frame down: the frames of the
// recovery itself are dropped, so the 2,000 bytes a job keeps of its error
// hold the handler's frames.
func panicStack() []byte {
	s := debug.Stack()
	if i := bytes.Index(s, []byte("\npanic(")); i >= 0 {
		rest := s[i+1:]
		// Skip the panic( line and its file line.
		for n := 0; n < 2; n++ {
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				rest = rest[j+1:]
			}
		}
		return rest
	}
	return s
}
