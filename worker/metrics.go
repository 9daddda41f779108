package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// counterKind names a count kept both in Stats and as a metric.
type counterKind int

const (
	kindClaimed counterKind = iota
	kindCompleted
	kindFailed
	kindDeadLettered
	kindSnoozed
	kindReleased
	kindLeaseLost
	kindPanic
	kindConflict
	kindCancelled
	numKinds
)

var counterNames = [numKinds]struct{ name, desc string }{
	kindClaimed:      {"quickfdb.worker.jobs.claimed", "Jobs claimed."},
	kindCompleted:    {"quickfdb.worker.jobs.completed", "Jobs completed."},
	kindFailed:       {"quickfdb.worker.jobs.failed", "Job failures acked (the queue retries them or dead-letters the exhausted)."},
	kindDeadLettered: {"quickfdb.worker.jobs.dead_lettered", "Jobs dead-lettered."},
	kindSnoozed:      {"quickfdb.worker.jobs.snoozed", "Jobs snoozed."},
	kindReleased:     {"quickfdb.worker.jobs.released", "Jobs handed back on shutdown."},
	kindLeaseLost:    {"quickfdb.worker.lease_losses", "Leases this worker lost while running their jobs."},
	kindPanic:        {"quickfdb.worker.panics", "Handler panics recovered."},
	kindConflict:     {"quickfdb.worker.conflicts", "Races lost to other transactions (not_committed, or a job claimed by another worker)."},
	kindCancelled:    {"quickfdb.worker.jobs.cancelled", "Jobs their handlers cancelled (worker.Cancel)."},
}

type metrics struct {
	counters [numKinds]metric.Int64Counter
	refusals metric.Int64Counter
	latency  metric.Float64Histogram
}

func newMetrics(w *Worker, mp metric.MeterProvider) (*metrics, error) {
	m := &metrics{}
	meter := mp.Meter("github.com/quickfdb/quickfdb/worker")
	var err error
	for k := range numKinds {
		n := counterNames[k]
		if m.counters[k], err = meter.Int64Counter(n.name, metric.WithDescription(n.desc), metric.WithUnit("{job}")); err != nil {
			return nil, err
		}
	}
	if m.refusals, err = meter.Int64Counter("quickfdb.worker.claims.refused",
		metric.WithDescription("Claim rounds refused: heartbeat stale, clock skew, not registered yet."), metric.WithUnit("{round}")); err != nil {
		return nil, err
	}
	if m.latency, err = meter.Float64Histogram("quickfdb.worker.vested_to_start",
		metric.WithDescription("Time from a job vesting (Lease.VestedAt) to its claim."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)); err != nil {
		return nil, err
	}
	// A gauge is one value per label set: the worker's ID is a label, so
	// several workers sharing a process (and a MeterProvider) each have
	// their series instead of overwriting one. Counters need no such
	// label: the SDK sums the workers' adds, which is the process's count.
	running, err := meter.Int64ObservableGauge("quickfdb.worker.jobs.running",
		metric.WithDescription("Handlers running now, per worker and task type."), metric.WithUnit("{job}"))
	if err != nil {
		return nil, err
	}
	dropped, err := meter.Int64ObservableCounter("quickfdb.worker.events.dropped",
		metric.WithDescription("Job events lost to a subscriber's full buffer (Subscribe)."), metric.WithUnit("{event}"))
	if err != nil {
		return nil, err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, r := range w.snapshotRunners() {
			set := metric.WithAttributes(append(w.clusterAttr(), attribute.String("worker", w.ID()), attribute.String("task_type", r.taskType))...)
			o.ObserveInt64(running, int64(len(r.runningJobs())), set)
		}
		o.ObserveInt64(dropped, w.events.dropped.Load())
		return nil
	}, running, dropped)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// attr returns the task type attribute set, built once per runner.
func (r *runner) attr() metric.MeasurementOption {
	r.attrOnce.Do(func() {
		r.attrSet = metric.WithAttributeSet(attribute.NewSet(append(r.w.clusterAttr(), attribute.String("task_type", r.taskType))...))
	})
	return r.attrSet
}

// count adds n to a count of Stats and to its metric.
func (w *Worker) count(r *runner, k counterKind, n int64) {
	s := &w.stats
	switch k {
	case kindClaimed:
		s.claimed.Add(n)
	case kindCompleted:
		s.completed.Add(n)
		w.presence.tp.count(r.taskType, false, n) // fleet throughput (throughput.go)
	case kindFailed:
		s.failed.Add(n)
		w.presence.tp.count(r.taskType, true, n)
	case kindDeadLettered:
		s.deadLettered.Add(n)
	case kindSnoozed:
		s.snoozed.Add(n)
	case kindReleased:
		s.released.Add(n)
	case kindLeaseLost:
		s.leaseLost.Add(n)
	case kindPanic:
		s.panics.Add(n)
	case kindConflict:
		s.conflicts.Add(n)
	case kindCancelled:
		s.cancelled.Add(n)
	}
	w.met.counters[k].Add(context.Background(), n, r.attr())
}

func (m *metrics) vestedToStart(r *runner, d time.Duration) {
	m.latency.Record(context.Background(), max(d, 0).Seconds(), r.attr())
}

func (m *metrics) refused(r *runner, reason string) {
	m.refusals.Add(context.Background(), 1, metric.WithAttributes(append(r.w.clusterAttr(),
		attribute.String("task_type", r.taskType), attribute.String("reason", reasonLabel(reason)))...))
}

// clusterAttr is the "cluster" attribute of a Group's member (Config.Cluster),
// none for a worker on its own.
func (w *Worker) clusterAttr() []attribute.KeyValue {
	if w.cfg.Cluster == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("cluster", w.cfg.Cluster)}
}

func reasonLabel(reason string) string {
	switch reason {
	case refuseSkew:
		return "clock_skew"
	case refuseClockUnknown:
		return "clock_unknown"
	case refusePaused:
		return "paused"
	case refusePauseUnknown:
		return "pause_unknown"
	}
	return "other"
}
