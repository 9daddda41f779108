package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// Workers that serve several clusters (docs/design.md, "Workers that serve
// several clusters"). A Group is one process's worker for several
// databases: one Worker per cluster (a queue on its own kv.Database), each
// with its own claim loops, lease keeper, acker, clock check, duties and
// presence record in its own database, so a cluster that is down or slow
// stalls only its own loops. What they share is the process's handler
// slots: the runners of one task type split its Concurrency by demand
// (slotshare.go), and each claim is bounded by Config.ClaimTimeout, so the
// claims of a cluster that does not answer fail and back off instead of
// holding slots.
//
// Every member worker is labelled with its cluster's name (Config.Cluster):
// its metrics carry a "cluster" attribute, its events and its presence
// record the name, so the console and the CLI show which cluster each is.
//
// Keys: none of its own (each member's, in its own database).

// Cluster is one cluster (database) a Group serves: its queue, by name.
type Cluster struct {
	// Name labels the cluster's worker in metrics, events and its
	// presence record: 1 to 64 bytes of letters, digits, '-', '_' and '.'.
	Name  string
	Queue *quick.Queue
}

// GroupConfig configures a Group.
type GroupConfig struct {
	// Clusters are the clusters served, at least one, names unique.
	Clusters []Cluster
	// Config is each member worker's configuration, but Queue and Cluster
	// (from Clusters). Its ID (default host-pid-random) is every member's:
	// one process holds the leases, in each database. ClaimTimeout
	// defaults to DefaultGroupClaimTimeout. Clock defaults to the first
	// cluster's queue's. MeterProvider, Logger and the rest are shared.
	Config Config
}

// DefaultGroupClaimTimeout bounds a Group member's claim unless
// Config.ClaimTimeout says otherwise: FDB's own transaction limit, so a
// healthy cluster's claim never reaches it, and a claim on a cluster that
// does not answer gives its slots back within it.
const DefaultGroupClaimTimeout = 5 * time.Second

// ErrClaimTimeout is the cause of a claim cut short by Config.ClaimTimeout.
var ErrClaimTimeout = errors.New("worker: claim timed out")

// maxClusterName bounds Cluster.Name (a metric label and a presence field).
const maxClusterName = 64

// Group is one process's worker for several clusters. Register handlers on
// every member with Each, then Run.
type Group struct {
	workers []*Worker
	byName  map[string]*Worker

	mu      sync.Mutex
	started bool
	shares  []*slotShare
	done    chan struct{}
}

// NewGroup returns a Group serving cfg.Clusters. It writes nothing until Run.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if len(cfg.Clusters) == 0 {
		return nil, fmt.Errorf("%w: GroupConfig.Clusters is empty", ErrInvalidConfig)
	}
	base := cfg.Config
	if base.ID == "" {
		base.ID = defaultID()
	}
	if base.ClaimTimeout == 0 {
		base.ClaimTimeout = DefaultGroupClaimTimeout
	}
	if base.Clock == nil && cfg.Clusters[0].Queue != nil {
		base.Clock = cfg.Clusters[0].Queue.Options().Clock
	}
	g := &Group{byName: map[string]*Worker{}, done: make(chan struct{})}
	for _, c := range cfg.Clusters {
		if c.Name == "" {
			return nil, fmt.Errorf("%w: a cluster has no name", ErrInvalidConfig)
		}
		if g.byName[c.Name] != nil {
			return nil, fmt.Errorf("%w: cluster %q listed twice", ErrInvalidConfig, c.Name)
		}
		mc := base
		mc.Queue, mc.Cluster = c.Queue, c.Name
		w, err := New(mc)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		g.workers = append(g.workers, w)
		g.byName[c.Name] = w
	}
	return g, nil
}

// validClusterName checks a Cluster.Name.
func validClusterName(name string) error {
	if len(name) > maxClusterName {
		return fmt.Errorf("%w: cluster name %q is over %d bytes", ErrInvalidConfig, name, maxClusterName)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("%w: cluster name %q: only letters, digits, '-', '_' and '.'", ErrInvalidConfig, name)
		}
	}
	return nil
}

// Workers returns the member workers, one per cluster, in Clusters order.
func (g *Group) Workers() []*Worker { return append([]*Worker(nil), g.workers...) }

// Worker returns the member worker of the named cluster, or nil.
func (g *Group) Worker(cluster string) *Worker { return g.byName[cluster] }

// Each calls setup on every member worker, in Clusters order: register the
// same handlers on each (the Concurrency of a task type is then the
// process's, shared by the clusters; the largest registered counts).
func (g *Group) Each(setup func(w *Worker) error) error {
	for _, w := range g.workers {
		if err := setup(w); err != nil {
			return fmt.Errorf("cluster %s: %w", w.cfg.Cluster, err)
		}
	}
	return nil
}

// Run runs every member until ctx is done or Stop is called, then stops
// them all gracefully. A member that returns early (an error) stops the
// others. It returns the members' errors joined, each naming its cluster.
func (g *Group) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.started {
		g.mu.Unlock()
		return ErrStarted
	}
	g.started = true
	g.shares = g.linkShares()
	g.mu.Unlock()
	defer close(g.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(g.workers))
	var wg sync.WaitGroup
	for i, w := range g.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", w.cfg.Cluster, err)
			}
			// One member ending ends the group: the others stop too.
			cancel()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// linkShares makes each task type registered on several members share its
// slots among them (slotshare.go). Before any member runs.
func (g *Group) linkShares() []*slotShare {
	byType := map[string][]*runner{}
	var order []string
	for _, w := range g.workers {
		for _, r := range w.snapshotRunners() {
			if byType[r.taskType] == nil {
				order = append(order, r.taskType)
			}
			byType[r.taskType] = append(byType[r.taskType], r)
		}
	}
	var shares []*slotShare
	for _, t := range order {
		rs := byType[t]
		if len(rs) < 2 {
			continue
		}
		total := 0
		for _, r := range rs {
			total = max(total, r.opts.Concurrency)
		}
		shares = append(shares, newSlotShare(total, rs))
	}
	return shares
}

// Stop stops every member gracefully and waits until they have (or ctx is
// done); idempotent.
func (g *Group) Stop(ctx context.Context) error {
	errs := make([]error, len(g.workers))
	var wg sync.WaitGroup
	for i, w := range g.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", w.cfg.Cluster, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Done is closed when Run has returned.
func (g *Group) Done() <-chan struct{} { return g.done }

// ClusterStats are one member's counts.
type ClusterStats struct {
	Cluster string
	Stats
}

// Stats returns each member's counts, in Clusters order.
func (g *Group) Stats() []ClusterStats {
	out := make([]ClusterStats, len(g.workers))
	for i, w := range g.workers {
		out[i] = ClusterStats{Cluster: w.cfg.Cluster, Stats: w.Stats()}
	}
	return out
}

// Ready reports nil when every member claims (Worker.Ready), else the
// members' reasons, each naming its cluster.
func (g *Group) Ready() error {
	var errs []error
	for _, w := range g.workers {
		if err := w.Ready(); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", w.cfg.Cluster, err))
		}
	}
	return errors.Join(errs...)
}

// Cluster returns the name of the cluster the worker serves in a Group
// (Config.Cluster), or "".
func (w *Worker) Cluster() string { return w.cfg.Cluster }

// claimContext bounds one claim by Config.ClaimTimeout on the worker
// clock (none without one). A claim cut short by it may have committed: its
// leases then lapse and the jobs run again (at least once, never lost), the
// price of not holding slots on a cluster that does not answer.
func (w *Worker) claimContext() (context.Context, context.CancelFunc) {
	d := w.cfg.ClaimTimeout
	if d <= 0 || mutant.On("worker.claim-timeout") {
		return w.bg, func() {}
	}
	return clockTimeout(w.bg, w.clk, d, ErrClaimTimeout)
}

// clockTimeout is a context cancelled with cause after d on clk: a context
// deadline on the real clock, a timer on another (a test's Fake), so that
// the deadline moves with that clock.
func clockTimeout(parent context.Context, clk clock.Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if clk == clock.Real() {
		return context.WithTimeoutCause(parent, d, cause)
	}
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(cause)
		case <-ctx.Done():
			t.Stop()
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// quiet reports whether every member is quiet (Worker.quiet) and no slot
// grant waits to be delivered: only a clock advance moves the group.
func (g *Group) quiet() bool {
	g.mu.Lock()
	shares := g.shares
	g.mu.Unlock()
	for _, s := range shares {
		if s.pending.Load() != 0 {
			return false
		}
	}
	for _, w := range g.workers {
		if !w.quiet() {
			return false
		}
	}
	return true
}
