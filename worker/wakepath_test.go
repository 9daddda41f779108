package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// A worker woken by an enqueue claims before it writes anything else: the
// first transaction after the enqueue that commits a write is the claim,
// not a raise of the sleep key (a commit round trip, ~3 ms under FDB's
// latencies, that used to sit between the wake-up and the claim). And the
// protocol still holds: each time the worker sleeps again, its sleep is
// registered to its end and the watch armed, so the next enqueue wakes it
// with no clock advance, wherever in its registration it was woken and
// however long its job ran.
func TestWokenWorkerClaimsFirst(t *testing.T) {
	{
		t.Run("claim-loop", func(t *testing.T) {
			raw, space := fdbtest.OpenMem(t, memkv.Options{})
			tdb := &traceDB{inner: raw, space: space}
			e := newEnvOn(t, tdb, space, zonesOptions())
			var done atomic.Int64
			var hold atomic.Bool
			held, release := make(chan struct{}), make(chan struct{})
			w := e.newWorker(Config{MaxIdleSleep: 10 * time.Second}, func(w *Worker) {
				if err := RegisterRaw(w, "wake", func(context.Context, *RawJob) error {
					if hold.CompareAndSwap(true, false) {
						held <- struct{}{}
						<-release
					}
					done.Add(1)
					return nil
				}, HandlerOptions{Concurrency: 1, Lease: 10 * time.Minute}); err != nil {
					t.Fatal(err)
				}
			})
			e.start(w)
			e.settle(w)
			e.step(time.Minute, time.Second, w) // into long sleeps
			r := w.byType["wake"]
			for round := range 10 {
				// Wake the worker at different points of its registration.
				e.step(time.Duration(round)*3*time.Second, time.Second, w)
				tdb.reset()
				// In odd rounds the job outlasts what the registration had
				// left at the wake-up (at least a second, the margin the
				// timed-out sleep left): the worker must raise it before it
				// sleeps again.
				// A second job keeps the worker's slots full meanwhile, so
				// that no idle sleep times out (which would raise the
				// registration on its own).
				want := done.Load() + 1
				if round%2 == 1 {
					hold.Store(true)
					want++
					e.enqueue(quick.NewJob{TaskType: "wake"}, quick.NewJob{TaskType: "wake"})
				} else {
					e.enqueue(quick.NewJob{TaskType: "wake"})
				}
				if round%2 == 1 {
					<-held
					r.waker.mu.Lock()
					left := r.waker.until.Sub(e.clk.Now())
					r.waker.mu.Unlock()
					e.settle(w)
					e.step(max(left, 0)+2*time.Second, time.Second, w)
					release <- struct{}{}
				}
				park := &r.zparks[0]
				// The handler counts before it returns and frees its slot:
				// settled means asleep on a timer again, not waiting for a
				// slot. The in-process wake-up can start the job before the
				// enqueue's watch notification reaches the waker, which
				// then wakes the sleeping loop once more to re-arm: settled
				// also means that wake-up is done (none pending, a watch
				// armed), else the check below would look at the loop
				// between the notification and its re-arm.
				e.waitFor(fmt.Sprintf("round %d's jobs to run and the worker to sleep with its watch armed", round), func() bool {
					until := park.until.Load()
					return done.Load() == want && w.quiet() && until != noTimer &&
						len(r.waker.fired) == 0 && r.waker.covers(time.Unix(0, until))
				})
				txs := tdb.take()
				var first *traceTx
				for _, tx := range txs {
					if tx.kind() != "enqueue" && tx.committedWrites() {
						first = tx
						break
					}
				}
				if first == nil || first.kind() == "sleep registration" {
					t.Fatalf("round %d: the woken worker's first write is %v, want its claim; transactions:\n%s", round, txKind(first), timeline(txs, time.Time{}, time.Now()))
				}
				// Asleep again: registered until the sleep's end at least,
				// with the watch armed.
				until := park.until.Load()
				var reg int64
				if err := raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
					v, err := tr.Get(wake.SleepKey(e.q.Root(), "wake")).Get()
					if len(v) == 8 {
						reg = int64(binary.LittleEndian.Uint64(v))
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if end := time.Unix(0, until).UnixMilli(); reg < end {
					t.Fatalf("round %d: asleep until %d ms with the sleep key at %d ms: an enqueue would not wake it", round, end, reg)
				}
				if !r.waker.covers(time.Unix(0, until)) {
					t.Fatalf("round %d: asleep without an armed watch covering the sleep", round)
				}
			}
		})
	}
}

func txKind(tx *traceTx) string {
	if tx == nil {
		return "none"
	}
	return tx.kind()
}
