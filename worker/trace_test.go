package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// BenchmarkZonesIdleTrace breaks BenchmarkZonesEnqueueToStartIdle's
// latency down: the same idle enqueue-to-start over memkv with FDB's
// latencies, with every kv operation of every transaction timed (a
// tracing wrapper around the database; nothing in the library changes).
// Each transaction is named by what it touches (enqueue, claim, the
// wake-up watch, the sleep registration, ...). It reports, as medians over
// the jobs, when each step ends after the enqueue started, and with -v it
// logs a few jobs' timelines. Run it with
//
//	go test -run '^$' -bench ZonesIdleTrace -benchtime 50x -v ./worker/
//
// The exact-waits variant runs memkv's injected latencies on a clock whose
// timers fire on time (exactClock): Go's own timers, through the runtime's
// netpoller on Linux, fire only on whole milliseconds plus about 0.1 ms
// when the process is otherwise idle, so each injected wait of 0.1-1 ms
// takes about 1.1 ms and one of 1-2 ms about 2.1 ms. The default variant
// is what BenchmarkZonesEnqueueToStartIdle and bench/peers measure; the
// exact one shows the same round trips at FDB's nominal latencies.
func BenchmarkZonesIdleTrace(b *testing.B) {
	if fdbkv.Built {
		// On the FoundationDB that fdbtest finds: its own latencies.
		b.Run("fdb", func(b *testing.B) {
			raw, space := fdbtest.Open(b)
			benchIdleTraceOn(b, raw, space)
		})
		return
	}
	for _, exact := range []bool{false, true} {
		name := "go-timers"
		if exact {
			name = "exact-waits"
		}
		b.Run(name, func(b *testing.B) { benchIdleTrace(b, exact) })
	}
}

func benchIdleTrace(b *testing.B, exact bool) {
	mo := memkv.Options{Latency: memkv.FDBLatency(), Seed: 1}
	if exact {
		mo.Wait = exactClock{}
	}
	raw, space := fdbtest.OpenMem(b, mo)
	benchIdleTraceOn(b, raw, space)
}

// benchIdleTraceOn is the trace on raw, under space.
func benchIdleTraceOn(b *testing.B, raw kv.Database, space tuple.Subspace) {
	tdb := &traceDB{inner: raw, space: space}
	opts := quick.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	q, err := quick.Open(ctx, tdb, space, opts)
	if err != nil {
		b.Fatal(err)
	}
	started := startIdleZonesWorker(b, ctx, q)
	steps := map[string][]time.Duration{}
	var order []string
	note := func(name string, d time.Duration) {
		if _, ok := steps[name]; !ok {
			order = append(order, name)
		}
		steps[name] = append(steps[name], d)
	}
	var lat latencies
	type slowJob struct {
		i  int
		d  time.Duration
		tl string
	}
	var slow []slowJob
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		time.Sleep(200*time.Millisecond + rand.N(800*time.Millisecond))
		tdb.reset()
		b.StartTimer()
		t0 := time.Now()
		if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "bench", ItemSpace: fmt.Sprintf("t%d", i%10)}); err != nil {
			b.Fatal(err)
		}
		t1 := <-started
		lat.add(t1.Sub(t0))
		b.StopTimer()
		// Let the claim's own tail (the commit's second half) land in
		// the trace before it is read.
		time.Sleep(20 * time.Millisecond)
		txs := tdb.take()
		if i < 3 {
			b.Logf("job %d: %.2f ms\n%s", i, ms(t1.Sub(t0)), timeline(txs, t0, t1))
		}
		slow = append(slow, slowJob{i, t1.Sub(t0), timeline(txs, t0, t1)})
		slices.SortFunc(slow, func(a, b slowJob) int { return int(b.d - a.d) })
		slow = slow[:min(len(slow), 3)]
		for _, tx := range txs {
			if tx.first().After(t1) {
				continue
			}
			name := tx.kind()
			note(name+": first op starts", tx.first().Sub(t0))
			for k, end := range tx.roundTrips() {
				note(fmt.Sprintf("%s: read round trip %d ends", name, k+1), end.Sub(t0))
			}
			for _, e := range tx.events() {
				if strings.HasPrefix(e.what, "commit") {
					note(name+": commit starts", e.start.Sub(t0))
					note(name+": commit ends", e.end.Sub(t0))
				}
			}
		}
		for _, f := range tdb.takeFired() {
			if !f.Before(t0) && !f.After(t1) {
				note("watch fires", f.Sub(t0))
			}
		}
		note("handler starts", t1.Sub(t0))
		b.StartTimer()
	}
	b.StopTimer()
	for _, j := range slow {
		b.Logf("slowest: job %d: %.2f ms\n%s", j.i, ms(j.d), j.tl)
	}
	for _, name := range order {
		d := steps[name]
		slices.Sort(d)
		b.Logf("%-52s median %6.2f ms (n=%d)", name, ms(d[len(d)/2]), len(d))
	}
	lat.report(b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// timeline prints a job's transactions, each op with its start and end in
// ms after t0.
func timeline(txs []*traceTx, t0, t1 time.Time) string {
	var sb strings.Builder
	for _, tx := range txs {
		if tx.first().After(t1) {
			continue
		}
		fmt.Fprintf(&sb, "  tx %d %s\n", tx.id, tx.kind())
		for _, e := range tx.events() {
			fmt.Fprintf(&sb, "    %7.2f %7.2f  %s\n", ms(e.start.Sub(t0)), ms(e.end.Sub(t0)), e.what)
		}
	}
	return sb.String()
}

// traceDB times every operation of its transactions.
type traceDB struct {
	inner kv.Database
	space tuple.Subspace

	mu    sync.Mutex
	next  int
	txs   []*traceTx
	fired []time.Time
}

func (d *traceDB) reset() { d.take(); d.takeFired() }

func (d *traceDB) take() []*traceTx {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.txs
	d.txs = nil
	return t
}

func (d *traceDB) takeFired() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.fired
	d.fired = nil
	return f
}

// Unwrap lets the library see the engine beneath, as through kv.WithCounters.
func (d *traceDB) Unwrap() kv.Database { return d.inner }

func (d *traceDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.next++
	t := &traceTx{Transaction: tr, db: d, id: d.next}
	d.txs = append(d.txs, t)
	d.mu.Unlock()
	return t, nil
}

func (d *traceDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *traceDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

// name describes a key by its tuple under the test subspace, cut short.
func (d *traceDB) name(k []byte) string {
	t, err := d.space.Unpack(k)
	if err != nil {
		return fmt.Sprintf("%q", k)
	}
	var parts []string
	for i, e := range t {
		if i == 6 {
			parts = append(parts, "…")
			break
		}
		switch v := e.(type) {
		case []byte:
			parts = append(parts, fmt.Sprintf("b%d", len(v)))
		case tuple.Tuple:
			parts = append(parts, "(…)")
		default:
			parts = append(parts, fmt.Sprint(v))
		}
	}
	return "(" + strings.Join(parts, ",") + ")"
}

type traceEvent struct {
	what       string
	start, end time.Time
}

type traceTx struct {
	kv.Transaction
	db *traceDB
	id int

	mu  sync.Mutex
	evs []*traceEvent
}

func (t *traceTx) begin(what string) *traceEvent {
	e := &traceEvent{what: what, start: time.Now()}
	t.mu.Lock()
	t.evs = append(t.evs, e)
	t.mu.Unlock()
	return e
}

func (t *traceTx) done(e *traceEvent) {
	t.mu.Lock()
	if e.end.IsZero() {
		e.end = time.Now()
	}
	t.mu.Unlock()
}

func (t *traceTx) events() []traceEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]traceEvent, 0, len(t.evs))
	for _, e := range t.evs {
		c := *e
		if c.end.IsZero() {
			c.end = c.start
		}
		out = append(out, c)
	}
	return out
}

func (t *traceTx) first() time.Time {
	evs := t.events()
	if len(evs) == 0 {
		return time.Time{}
	}
	return evs[0].start
}

func (t *traceTx) last() time.Time {
	var l time.Time
	for _, e := range t.events() {
		if e.end.After(l) {
			l = e.end
		}
	}
	return l
}

// roundTrips groups the transaction's reads by when they end (reads
// ending within 0.3 ms of each other shared a round trip) and returns the
// end of each group.
func (t *traceTx) roundTrips() []time.Time {
	var ends []time.Time
	for _, e := range t.events() {
		if strings.Contains(e.what, "get ") || strings.Contains(e.what, "range ") {
			ends = append(ends, e.end)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	var out []time.Time
	for _, e := range ends {
		if n := len(out); n > 0 && e.Sub(out[n-1]) < 300*time.Microsecond {
			out[n-1] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// kind names a transaction by what it does.
func (t *traceTx) kind() string {
	var all string
	for _, e := range t.events() {
		all += e.what + ";"
	}
	switch {
	case strings.Contains(all, "watch "):
		return "wake watch"
	case strings.Contains(all, "max ") && strings.Contains(all, "sleep"):
		return "sleep registration"
	case strings.Contains(all, "set (2,z,") && strings.Contains(all, "(2,m,"):
		return "enqueue"
	case strings.Contains(all, "range (2,p,") && strings.Contains(all, "clear (2,z,"):
		return "claim that took the job"
	case strings.Contains(all, "range (2,p,"):
		return "empty claim"
	case strings.Contains(all, "(1,zc"):
		return "clock check"
	case strings.Contains(all, "clear (2,z,"):
		return "ack"
	}
	return "other"
}

func (t *traceTx) Get(key []byte) kv.Future[[]byte] {
	return &traceGet{t: t, e: t.begin("get " + t.db.name(key)), inner: t.Transaction.Get(key)}
}

func (t *traceTx) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.RangeResult {
	return &traceRange{t: t, e: t.begin(fmt.Sprintf("range %s limit %d", t.db.name(r.Begin), opts.Limit)), inner: t.Transaction.GetRange(r, opts)}
}

func (t *traceTx) Snapshot() kv.ReadTransaction {
	return &traceSnap{t: t, inner: t.Transaction.Snapshot()}
}

func (t *traceTx) Set(key, value []byte) {
	t.done(t.begin("set " + t.db.name(key)))
	t.Transaction.Set(key, value)
}

func (t *traceTx) Clear(key []byte) {
	t.done(t.begin("clear " + t.db.name(key)))
	t.Transaction.Clear(key)
}

func (t *traceTx) Max(key, param []byte) {
	t.done(t.begin("max " + t.db.name(key)))
	t.Transaction.Max(key, param)
}

func (t *traceTx) Add(key, param []byte) {
	t.done(t.begin("add " + t.db.name(key)))
	t.Transaction.Add(key, param)
}

func (t *traceTx) Watch(key []byte) kv.Watch {
	e := t.begin("watch " + t.db.name(key))
	t.done(e)
	return &traceWatch{db: t.db, inner: t.Transaction.Watch(key)}
}

func (t *traceTx) Commit() error {
	e := t.begin("commit")
	err := t.Transaction.Commit()
	if err != nil {
		e.what += " (" + err.Error() + ")"
	}
	t.done(e)
	return err
}

func (t *traceTx) OnError(err error) error {
	e := t.begin("onerror " + err.Error())
	rerr := t.Transaction.OnError(err)
	t.done(e)
	return rerr
}

type traceSnap struct {
	t     *traceTx
	inner kv.ReadTransaction
}

func (s *traceSnap) Get(key []byte) kv.Future[[]byte] {
	return &traceGet{t: s.t, e: s.t.begin("snap get " + s.t.db.name(key)), inner: s.inner.Get(key)}
}

func (s *traceSnap) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.RangeResult {
	return &traceRange{t: s.t, e: s.t.begin(fmt.Sprintf("snap range %s limit %d", s.t.db.name(r.Begin), opts.Limit)), inner: s.inner.GetRange(r, opts)}
}

func (s *traceSnap) GetReadVersion() kv.Future[int64] { return s.inner.GetReadVersion() }
func (s *traceSnap) Snapshot() kv.ReadTransaction     { return s }

type traceGet struct {
	t     *traceTx
	e     *traceEvent
	inner kv.Future[[]byte]
}

func (g *traceGet) Get() ([]byte, error) {
	v, err := g.inner.Get()
	g.t.done(g.e)
	return v, err
}

type traceRange struct {
	t     *traceTx
	e     *traceEvent
	inner kv.RangeResult
}

func (r *traceRange) GetSliceWithError() ([]kv.KeyValue, error) {
	kvs, err := r.inner.GetSliceWithError()
	r.t.done(r.e)
	return kvs, err
}

func (r *traceRange) Iterator() kv.RangeIterator { return r.inner.Iterator() }

type traceWatch struct {
	db    *traceDB
	inner kv.Watch
}

func (w *traceWatch) Wait(ctx context.Context) error {
	err := w.inner.Wait(ctx)
	if err == nil {
		w.db.mu.Lock()
		w.db.fired = append(w.db.fired, time.Now())
		w.db.mu.Unlock()
	}
	return err
}

func (w *traceWatch) Cancel() { w.inner.Cancel() }

// exactClock is the real clock with timers that fire on time: After sleeps
// until 1.5 ms before the deadline, then yields until it has passed. It
// spends CPU on every wait, so it serves the idle benchmarks only, where
// few waits are in flight at once.
type exactClock struct{}

func (exactClock) Now() time.Time { return time.Now() }

func (exactClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	at := time.Now().Add(d)
	go func() {
		if early := time.Until(at) - 1500*time.Microsecond; early > 0 {
			time.Sleep(early)
		}
		for time.Now().Before(at) {
			runtime.Gosched()
		}
		ch <- time.Now()
	}()
	return ch
}

func (exactClock) NewTimer(d time.Duration) clock.Timer { return clock.Real().NewTimer(d) }

func (exactClock) NewTicker(d time.Duration) clock.Ticker { return clock.Real().NewTicker(d) }

// committedWrites reports whether the transaction committed mutations.
func (t *traceTx) committedWrites() bool {
	wrote, committed := false, false
	for _, e := range t.events() {
		switch {
		case strings.HasPrefix(e.what, "set ") || strings.HasPrefix(e.what, "clear ") || strings.HasPrefix(e.what, "max ") || strings.HasPrefix(e.what, "add "):
			wrote = true
		case e.what == "commit":
			committed = true
		}
	}
	return wrote && committed
}
