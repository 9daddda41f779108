package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// DepthOptions configure a DepthReporter.
type DepthOptions struct {
	Queue *quick.Queue
	// Holder names this process in the lease (a worker's ID). Required.
	Holder string
	// TaskTypes to measure; nil measures every type the queue knows.
	TaskTypes []string
	// Interval between measurements. Default 15 s. The lease lasts three
	// intervals, so a dead holder is replaced within 3 × Interval.
	Interval time.Duration
	// Budget is the most keys read per task type and measurement
	// (quick.DepthOptions.Budget); beyond it counts are lower bounds, and
	// the gauges say exact="false". Default 10,000.
	Budget int
	// TopTenants bounds the per-tenant series: each task type reports the
	// tenants with the most ready jobs, at most this many (default 10, at
	// most 100), so a queue of a million tenants still exports at most
	// 3 × TopTenants tenant series per task type.
	TopTenants int
	Logger     *slog.Logger
	// Cluster, when set, adds a "cluster" attribute to every series: a
	// process serving several clusters (worker.Group) runs one reporter
	// per cluster on one MeterProvider.
	Cluster string
}

// DepthReporter measures queue depth for the whole fleet from one process
// at a time. Every reporter tries, each Interval, to take or renew a lease
// key, S(1,"metrics","depth") beside the queue's keys, holding the holder's
// name and the lease's end; only the holder then measures the queue
// (quick.Depth per task type) and reports the gauges, so Prometheus sees
// one series per task type and state, and per top tenant and state,
// whatever the number of workers.
//
// Cost per Interval: each reporter, one transaction with one point read and
// (holder, or taking over) one write of the lease key; the holder alone,
// per task type, one quick.Depth: at most Budget keys read in two round
// trips, whatever the backlog or the number of tenants. Nothing per job.
type DepthReporter struct {
	o      DepthOptions
	key    []byte
	depth  metric.Int64ObservableGauge
	age    metric.Float64ObservableGauge
	tenant metric.Int64ObservableGauge
	// running and limit: the top tenants' running jobs against their
	// limits (quick.TenantDepth.Running, Limits), for the tenants that
	// have one.
	running metric.Int64ObservableGauge
	limit   metric.Float64ObservableGauge
	// tenantAge is the top tenants' oldest ready job's age; startRate their
	// jobs started a second (worker.ReadTenantStarts).
	tenantAge metric.Float64ObservableGauge
	startRate metric.Float64ObservableGauge

	mu      sync.Mutex
	until   time.Time // end of our lease, zero if not held
	samples []depthSample
}

type depthSample struct {
	taskType                       string
	ready, leased, scheduled, dead int64
	exact                          bool
	oldestReady                    time.Time
	tenants                        []quick.TenantDepth
	starts                         map[string]worker.TenantStartRate
}

// NewDepthReporter registers the gauges quickfdb.queue.depth (attributes
// task_type, state: ready, leased, scheduled, dead; exact),
// quickfdb.queue.oldest_ready_age (seconds) and quickfdb.queue.tenant_depth
// (attributes task_type, item_space, state: ready, leased, scheduled;
// exact; the TopTenants tenants with the most ready jobs),
// quickfdb.queue.tenant_running (task_type, item_space: jobs holding a slot
// of the tenant's concurrency limit), quickfdb.queue.tenant_oldest_ready_age
// (task_type, item_space; seconds), quickfdb.queue.tenant_start_rate
// (task_type, item_space; jobs started a second over the last minute) and
// quickfdb.queue.tenant_limit
// (task_type, item_space, limit: concurrency, rate, weight), both only for
// those top tenants that have limits, with mp. Run measures.
func NewDepthReporter(mp metric.MeterProvider, o DepthOptions) (*DepthReporter, error) {
	if o.Queue == nil || o.Holder == "" {
		return nil, errors.New("metrics: DepthOptions need a Queue and a Holder")
	}
	if o.Interval <= 0 {
		o.Interval = 15 * time.Second
	}
	if o.Budget <= 0 {
		o.Budget = 10_000
	}
	if o.TopTenants <= 0 {
		o.TopTenants = 10
	}
	o.TopTenants = min(o.TopTenants, 100)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &DepthReporter{o: o, key: o.Queue.Root().Sub("metrics").Pack(tuple.Tuple{"depth"})}
	meter := mp.Meter("github.com/quickfdb/quickfdb/metrics")
	var err error
	if r.depth, err = meter.Int64ObservableGauge("quickfdb.queue.depth",
		metric.WithDescription("Jobs per task type and state (ready, leased, scheduled, dead), measured by one process of the fleet."),
		metric.WithUnit("{job}")); err != nil {
		return nil, err
	}
	if r.age, err = meter.Float64ObservableGauge("quickfdb.queue.oldest_ready_age",
		metric.WithDescription("Age of the longest-waiting ready job per task type (0 if none)."), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if r.tenant, err = meter.Int64ObservableGauge("quickfdb.queue.tenant_depth",
		metric.WithDescription("Jobs per task type, tenant (item_space) and state, for the tenants with the most ready jobs."),
		metric.WithUnit("{job}")); err != nil {
		return nil, err
	}
	if r.running, err = meter.Int64ObservableGauge("quickfdb.queue.tenant_running",
		metric.WithDescription("Jobs holding a slot of their tenant's concurrency limit, per task type and tenant (item_space), for the top tenants that have a limit."),
		metric.WithUnit("{job}")); err != nil {
		return nil, err
	}
	if r.limit, err = meter.Float64ObservableGauge("quickfdb.queue.tenant_limit",
		metric.WithDescription("A top tenant's limits, per task type, tenant (item_space) and limit (concurrency in jobs, rate in starts a second, weight)."),
	); err != nil {
		return nil, err
	}
	if r.tenantAge, err = meter.Float64ObservableGauge("quickfdb.queue.tenant_oldest_ready_age",
		metric.WithDescription("Age of a top tenant's longest-waiting ready job, per task type and tenant (item_space); 0 if none."), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if r.startRate, err = meter.Float64ObservableGauge("quickfdb.queue.tenant_start_rate",
		metric.WithDescription("Jobs a top tenant started a second over the last minute, per task type and tenant (item_space), counted by the workers (worker.ReadTenantStarts)."), metric.WithUnit("{job}/s")); err != nil {
		return nil, err
	}
	if _, err = meter.RegisterCallback(r.observe, r.depth, r.age, r.tenant, r.running, r.limit, r.tenantAge, r.startRate); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *DepthReporter) observe(_ context.Context, o metric.Observer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.o.Queue.Now()
	if !now.Before(r.until) {
		return nil // not the holder (or the lease ran out): report nothing
	}
	var cl []attribute.KeyValue
	if r.o.Cluster != "" {
		cl = []attribute.KeyValue{attribute.String("cluster", r.o.Cluster)}
	}
	// with is the attributes of one series: the cluster's, then kvs.
	with := func(kvs ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributes(append(kvs, cl...)...)
	}
	for _, s := range r.samples {
		tt := attribute.String("task_type", s.taskType)
		for _, st := range []struct {
			name string
			n    int64
		}{{"ready", s.ready}, {"leased", s.leased}, {"scheduled", s.scheduled}, {"dead", s.dead}} {
			o.ObserveInt64(r.depth, st.n, with(tt, attribute.String("state", st.name), attribute.Bool("exact", s.exact || st.name == "dead")))
		}
		age := 0.0
		if !s.oldestReady.IsZero() {
			age = now.Sub(s.oldestReady).Seconds()
		}
		o.ObserveFloat64(r.age, age, with(tt))
		for _, td := range s.tenants {
			is := attribute.String("item_space", td.ItemSpace)
			ex := attribute.Bool("exact", td.Exact)
			for _, st := range []struct {
				name string
				n    int
			}{{"ready", td.Ready}, {"leased", td.Leased}, {"scheduled", td.Scheduled}} {
				o.ObserveInt64(r.tenant, int64(st.n), with(tt, is, attribute.String("state", st.name), ex))
			}
			tage := 0.0
			if !td.OldestReady.IsZero() {
				tage = max(now.Sub(td.OldestReady).Seconds(), 0)
			}
			o.ObserveFloat64(r.tenantAge, tage, with(tt, is))
			if sr, ok := s.starts[td.ItemSpace]; ok {
				o.ObserveFloat64(r.startRate, sr.PerSecond, with(tt, is))
			}
			observeLimits(o, r.running, r.limit, with, tt, is, td)
		}
	}
	return nil
}

// Holding reports whether this reporter holds the lease now.
func (r *DepthReporter) Holding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.o.Queue.Now().Before(r.until)
}

// Run measures every Interval until ctx is done.
func (r *DepthReporter) Run(ctx context.Context) error {
	clk := r.o.Queue.Options().Clock
	for {
		if err := r.Round(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("metrics: queue depth round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(r.o.Interval):
		}
	}
}

// Round takes or renews the lease and, if held, measures once.
func (r *DepthReporter) Round(ctx context.Context) error {
	held, err := r.lease(ctx)
	if err != nil || !held {
		return err
	}
	samples, err := r.measure(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.samples = samples
	r.mu.Unlock()
	return nil
}

// lease takes the lease if it is free, lapsed or ours.
//
// Keys: reads S(1,"metrics","depth"); sets it when taking or renewing.
func (r *DepthReporter) lease(ctx context.Context) (bool, error) {
	q := r.o.Queue
	var until time.Time
	err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		until = time.Time{}
		v, err := tr.Get(r.key).Get()
		if err != nil {
			return err
		}
		now := q.Now()
		if v != nil {
			holder, end, err := decodeLease(v)
			if err == nil && holder != r.o.Holder && now.Before(end) {
				return nil // another process measures
			}
		}
		until = now.Add(3 * r.o.Interval)
		tr.Set(r.key, encodeLease(r.o.Holder, until))
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("metrics: depth lease: %w", err)
	}
	r.mu.Lock()
	r.until = until
	r.mu.Unlock()
	return !until.IsZero(), nil
}

func (r *DepthReporter) measure(ctx context.Context) ([]depthSample, error) {
	q := r.o.Queue
	types := r.o.TaskTypes
	if types == nil {
		var err error
		if types, err = q.TaskTypes(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]depthSample, 0, len(types))
	for _, t := range types {
		d, err := q.Depth(ctx, quick.DepthOptions{TaskType: t, Budget: r.o.Budget, TopTenants: r.o.TopTenants})
		if err != nil {
			return nil, err
		}
		names := make([]string, len(d.Tenants))
		for i, td := range d.Tenants {
			names[i] = td.ItemSpace
		}
		// Two point reads per top tenant: at most 2 × TopTenants keys.
		starts, err := worker.ReadTenantStarts(ctx, q, t, names)
		if err != nil {
			return nil, err
		}
		out = append(out, depthSample{
			taskType: t, ready: int64(d.Ready), leased: int64(d.Leased), scheduled: int64(d.Scheduled), dead: d.Dead,
			exact: d.Exact, oldestReady: d.OldestReady, tenants: d.Tenants, starts: starts,
		})
	}
	return out, nil
}

// The lease value: field 1 the holder, field 2 the lease's end (Unix ms).
func encodeLease(holder string, until time.Time) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, holder)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(until.UnixMilli()))
}

var errBadLease = errors.New("metrics: corrupt depth lease value")

func decodeLease(b []byte) (string, time.Time, error) {
	var holder string
	var ms uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", time.Time{}, errBadLease
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, m := protowire.ConsumeString(b)
			if m < 0 {
				return "", time.Time{}, errBadLease
			}
			holder, b = s, b[m:]
		case num == 2 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return "", time.Time{}, errBadLease
			}
			ms, b = v, b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return "", time.Time{}, errBadLease
			}
			b = b[m:]
		}
	}
	return holder, time.UnixMilli(int64(ms)), nil
}

// observeLimits reports one top tenant's running jobs and limits, when it
// has any: a tenant without limits adds no series.
func observeLimits(o metric.Observer, running metric.Int64ObservableGauge, limit metric.Float64ObservableGauge, with func(...attribute.KeyValue) metric.MeasurementOption, tt, is attribute.KeyValue, td quick.TenantDepth) {
	l := td.Limits
	if l.Concurrency > 0 {
		o.ObserveInt64(running, td.Running, with(tt, is))
		o.ObserveFloat64(limit, float64(l.Concurrency), with(tt, is, attribute.String("limit", "concurrency")))
	}
	if l.Rate > 0 {
		o.ObserveFloat64(limit, l.Rate, with(tt, is, attribute.String("limit", "rate")))
	}
	if l.Weight > 0 {
		o.ObserveFloat64(limit, float64(l.Weight), with(tt, is, attribute.String("limit", "weight")))
	}
}
