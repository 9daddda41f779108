package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// outageDB makes a database unavailable on demand: while down, every
// transaction hangs until its context ends (and then fails with the
// context's error), or until the outage ends (and then runs), as a
// cluster that does not answer. fail makes them fail at once instead.
type outageDB struct {
	kv.Database
	mu   sync.Mutex
	down chan struct{} // non-nil while down; closed when it ends
	fail bool
}

var errClusterDown = errors.New("test: cluster down")

func (o *outageDB) setDown(down, fail bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail = fail
	if down && o.down == nil {
		o.down = make(chan struct{})
	}
	if !down && o.down != nil {
		close(o.down)
		o.down = nil
	}
}

// state is the outage now: nil when up.
func (o *outageDB) state() (chan struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down, o.fail
}

// CreateTransaction hands out transactions whose commits hang while the
// cluster is down (or fail at once, with fail), until cancelled (a
// context that ends: kv.Retry cancels the transaction) or the outage ends.
func (o *outageDB) CreateTransaction() (kv.Transaction, error) {
	if ch, fail := o.state(); ch != nil && fail {
		return nil, errClusterDown
	}
	tr, err := o.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &outageTx{Transaction: tr, o: o, cancelled: make(chan struct{})}, nil
}

func (o *outageDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := o.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

func (o *outageDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	if ch, fail := o.state(); ch != nil {
		if fail {
			return errClusterDown
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return o.Database.ReadTransact(ctx, fn)
}

type outageTx struct {
	kv.Transaction
	o         *outageDB
	once      sync.Once
	cancelled chan struct{}
}

func (t *outageTx) Cancel() {
	t.once.Do(func() { close(t.cancelled) })
	t.Transaction.Cancel()
}

func (t *outageTx) Commit() error {
	if ch, fail := t.o.state(); ch != nil {
		if fail {
			return errClusterDown
		}
		select {
		case <-ch:
		case <-t.cancelled:
			return kv.ErrTransactionCancelled
		}
	}
	return t.Transaction.Commit()
}

// twoClusters is a Group over two memkv databases ("east", "west") on one
// fake clock, each with a backlog of jobs whose handler takes runFor of
// fake time. It counts the starts per cluster and tracks the handlers
// asleep on the clock, so that it can tell when only an advance moves
// anything (settle).
type twoClusters struct {
	t       *testing.T
	clk     *clock.Fake
	envs    [2]*env
	outages [2]*outageDB
	g       *Group
	starts  [2]atomic.Int64
	// sleeps are the wake times of the handlers running, by handler.
	mu     sync.Mutex
	sleeps [2]map[int64]time.Time
	nextID int64
	// maxRunning is the most handlers running at once across the two,
	// seen at a settle.
	maxRunning int
	runErr     chan error
	// waitOn lists the clusters settle waits for (both but one that is
	// down: its loops hang in transactions, as they would).
	waitOn [2]bool
}

const (
	clusterConc   = 10
	clusterRunFor = 100 * time.Millisecond
	clusterStep   = 20 * time.Millisecond
)

func newTwoClusters(t *testing.T, backlog int) *twoClusters {
	t.Helper()
	tc := &twoClusters{t: t, clk: clock.NewFake(epoch), runErr: make(chan error, 1), waitOn: [2]bool{true, true}}
	var clusters []Cluster
	for i, name := range []string{"east", "west"} {
		raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: tc.clk})
		tc.outages[i] = &outageDB{Database: raw}
		tc.envs[i] = newEnvWith(t, tc.outages[i], space, tc.clk, quick.Options{})
		clusters = append(clusters, Cluster{Name: name, Queue: tc.envs[i].q})
		// A backlog over 20 tenants, so that both clusters stay saturated.
		for n := 0; n < backlog; n += 500 {
			jobs := make([]quick.NewJob, 0, 500)
			for k := n; k < min(backlog, n+500); k++ {
				jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("tenant-%d", k%20), Payload: []byte(`{}`)})
			}
			tc.envs[i].enqueue(jobs...)
		}
	}
	g, err := NewGroup(GroupConfig{Clusters: clusters, Config: Config{Logger: testLogger(), Clock: tc.clk}})
	if err != nil {
		t.Fatal(err)
	}
	tc.g = g
	err = g.Each(func(w *Worker) error {
		i := 0
		if w.Cluster() == "west" {
			i = 1
		}
		return Register(w, func(ctx context.Context, j *Job[emailArgs]) error {
			tc.starts[i].Add(1)
			timer := tc.clk.After(clusterRunFor)
			key := tc.sleeping(i, tc.clk.Now().Add(clusterRunFor))
			defer tc.woke(i, key)
			select {
			case <-timer:
			case <-ctx.Done():
			}
			return nil
		}, HandlerOptions{Concurrency: clusterConc})
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { tc.runErr <- g.Run(context.Background()) }()
	t.Cleanup(func() {
		for _, o := range tc.outages {
			o.setDown(false, false)
		}
		for _, w := range g.workers {
			w.kill()
		}
		<-tc.runErr
	})
	tc.settle()
	return tc
}

func (tc *twoClusters) sleeping(i int, until time.Time) int64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.nextID++
	if tc.sleeps[i] == nil {
		tc.sleeps[i] = map[int64]time.Time{}
	}
	tc.sleeps[i][tc.nextID] = until
	return tc.nextID
}

func (tc *twoClusters) woke(i int, key int64) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.sleeps[i], key)
}

// asleep is the handlers of cluster i asleep on a time still ahead.
func (tc *twoClusters) asleep(i int) int {
	now := tc.clk.Now()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	n := 0
	for _, t := range tc.sleeps[i] {
		if t.After(now) {
			n++
		}
	}
	return n
}

// active is the handlers the cluster's runners have launched.
func (tc *twoClusters) active(i int) int {
	n := 0
	for _, r := range tc.g.workers[i].snapshotRunners() {
		r.mu.Lock()
		n += r.active
		r.mu.Unlock()
	}
	return n
}

// settle waits until the clusters it waits on are quiet, no slot grant is
// in flight and every launched handler is asleep on the clock.
func (tc *twoClusters) settle() {
	tc.t.Helper()
	e := tc.envs[0]
	e.waitFor("the clusters to settle", func() bool {
		tc.g.mu.Lock()
		shares := tc.g.shares
		tc.g.mu.Unlock()
		for _, s := range shares {
			if s.pending.Load() != 0 {
				return false
			}
		}
		for i, w := range tc.g.workers {
			if !tc.waitOn[i] {
				continue
			}
			if quietWhy(w) != "" || tc.active(i) != tc.asleep(i) {
				return false
			}
		}
		return true
	})
	if n := tc.active(0) + tc.active(1); n > tc.maxRunning {
		tc.maxRunning = n
	}
}

// run advances the fake clock by d in steps, settling after each, and
// returns the starts per cluster in each window of win.
func (tc *twoClusters) run(d, win time.Duration) [][2]int64 {
	tc.t.Helper()
	var out [][2]int64
	last := [2]int64{tc.starts[0].Load(), tc.starts[1].Load()}
	for w := time.Duration(0); w < d; w += win {
		for s := time.Duration(0); s < win; s += clusterStep {
			tc.clk.Advance(clusterStep)
			tc.settle()
		}
		now := [2]int64{tc.starts[0].Load(), tc.starts[1].Load()}
		out = append(out, [2]int64{now[0] - last[0], now[1] - last[1]})
		last = now
	}
	return out
}

func sumWindows(ws [][2]int64, i int) int64 {
	var n int64
	for _, w := range ws {
		n += w[i]
	}
	return n
}

// Two saturated clusters share a task type's slots half and half: counted
// in jobs started over 10 s of fake time, within 5% of each other, and
// never more handlers at once than the task type's Concurrency.
func TestGroupSharesSlotsFairly(t *testing.T) {
	tc := newTwoClusters(t, 1500)
	tc.run(2*time.Second, time.Second) // warm-up: both saturated
	ws := tc.run(10*time.Second, time.Second)
	east, west := sumWindows(ws, 0), sumWindows(ws, 1)
	t.Logf("starts over 10 s of fake time: east %d, west %d; most handlers at once %d", east, west, tc.maxRunning)
	if east == 0 || west == 0 {
		t.Fatalf("a cluster started nothing: east %d, west %d", east, west)
	}
	mean := float64(east+west) / 2
	for _, n := range []int64{east, west} {
		if d := float64(n)/mean - 1; d > 0.05 || d < -0.05 {
			t.Fatalf("unfair shares: east %d, west %d (over 5%% off half)", east, west)
		}
	}
	// Saturated: the slots are all in use (10 handlers of 100 ms: 100
	// starts a second).
	if total := east + west; total < 950 {
		t.Fatalf("the two clusters started %d jobs in 10 s, want ~1000 (10 slots of 100 ms)", total)
	}
	if tc.maxRunning > clusterConc {
		t.Fatalf("%d handlers ran at once across the clusters, over the Concurrency %d", tc.maxRunning, clusterConc)
	}
}

// A cluster that does not answer for 30 s of fake time (its transactions
// hang until their contexts end) does not slow the other: its claims time
// out and give their slots back, and the other's starts per second stay
// within 10% of before (they grow: it takes the slots the dead one gave
// up); once it answers again, it works again.
func TestGroupOneClusterDown(t *testing.T) {
	for _, fail := range []bool{false, true} {
		name := "hang"
		if fail {
			name = "fail"
		}
		t.Run(name, func(t *testing.T) {
			tc := newTwoClusters(t, 4000)
			tc.run(2*time.Second, time.Second)
			before := tc.run(5*time.Second, time.Second)
			westBefore := float64(sumWindows(before, 1)) / float64(len(before))

			tc.outages[0].setDown(true, fail)
			tc.waitOn[0] = false
			during := tc.run(30*time.Second, time.Second)
			tc.outages[0].setDown(false, false)
			tc.waitOn[0] = true
			after := tc.run(5*time.Second, time.Second)

			t.Logf("west starts/s before %.0f; during the outage %v; east during %d, after %d",
				westBefore, column(during, 1), sumWindows(during[1:], 0), sumWindows(after, 0))
			for i, w := range during {
				if float64(w[1]) < 0.9*westBefore {
					t.Fatalf("west started %d jobs in second %d of east's outage, under 90%% of its %.0f/s before", w[1], i, westBefore)
				}
			}
			// After the claim timeout, west has east's slots but one.
			late := float64(sumWindows(during[10:], 1)) / float64(len(during)-10)
			if late < 1.5*westBefore {
				t.Fatalf("west ran %.0f jobs/s late in east's outage, %.0f before: east's slots did not come to it", late, westBefore)
			}
			if n := sumWindows(during[1:], 0); n != 0 {
				t.Fatalf("east started %d jobs while down", n)
			}
			if n := sumWindows(after[2:], 0); n == 0 {
				t.Fatal("east started nothing once it answered again")
			}
		})
	}
}

func column(ws [][2]int64, i int) []int64 {
	out := make([]int64, len(ws))
	for k, w := range ws {
		out[k] = w[i]
	}
	return out
}

// Each member worker carries its cluster's name: in its events, its
// presence record and its stats.
func TestGroupLabelsEachCluster(t *testing.T) {
	tc := newTwoClusters(t, 20)
	subs := make([]<-chan Event, 2)
	for i, w := range tc.g.workers {
		ch, cancel := w.Subscribe()
		defer cancel()
		subs[i] = ch
	}
	tc.run(time.Second, time.Second)
	for i, name := range []string{"east", "west"} {
		ev := <-subs[i]
		if ev.Cluster != name {
			t.Fatalf("an event of %s says cluster %q", name, ev.Cluster)
		}
		ps, err := ListWorkers(context.Background(), tc.envs[i].q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || ps[0].Cluster != name {
			t.Fatalf("presence in %s: %+v", name, ps)
		}
	}
	st := tc.g.Stats()
	if len(st) != 2 || st[0].Cluster != "east" || st[1].Cluster != "west" || st[0].Completed == 0 || st[1].Completed == 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestNewGroupRejectsBadClusters(t *testing.T) {
	e := newClockedEnv(t, quick.Options{})
	for _, cs := range [][]Cluster{
		nil,
		{{Name: "", Queue: e.q}},
		{{Name: "a", Queue: e.q}, {Name: "a", Queue: e.q}},
		{{Name: "a b", Queue: e.q}},
		{{Name: "a", Queue: nil}},
	} {
		if _, err := NewGroup(GroupConfig{Clusters: cs}); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%+v: err %v, want ErrInvalidConfig", cs, err)
		}
	}
}

// quietWhy is Worker.quiet, saying which loops are not quiet ("": all are).
func quietWhy(w *Worker) string {
	now := w.clk.Now()
	var out string
	if !w.keeper.loopState.asleep(now) || w.keeper.pending() || w.keeper.waitingOnLock() {
		out += " keeper"
	}
	if !w.acker.loopState.asleep(now) || w.acker.pending() {
		out += " acker"
	}
	if !w.dutyState.asleep(now) {
		out += fmt.Sprint(" duty", w.dutyState.until.Load()-now.UnixNano())
	}
	if !w.zclock.loopState.asleep(now) {
		out += " zclock"
	}
	if _, known := w.pause.isPaused(""); !known {
		out += " pause"
	}
	for _, r := range w.snapshotRunners() {
		if !r.shorts.loopState.asleep(now) || r.shorts.pending() {
			out += " shorts"
		}
		// A lane in the feed with no executor waiting for it stays there
		// until one does (they all hold lanes, waiting for slots): only
		// an advance moves that. (Worker.quiet counts it as not quiet.)
		if len(r.feed.ch) > 0 && r.feed.waiting.Load() > 0 {
			out += fmt.Sprint(" feed", len(r.feed.ch), r.feed.waiting.Load())
		}
		for i := range r.zparks {
			if !r.zparks[i].asleep(now) {
				out += fmt.Sprint(" zpark", i, r.zparks[i].until.Load()-now.UnixNano())
			}
		}
	}
	return out
}
