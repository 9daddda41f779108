package cron

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// Entry is a schedule and where its chain stands.
type Entry struct {
	Schedule
	// Next is the scheduled time of the pending or running occurrence
	// (zero when there is none).
	Next time.Time
	// NextID is that occurrence's job ID.
	NextID quick.ID
	// State is the occurrence's state: scheduled, ready or leased.
	State quick.State
	// Alive is set when the schedule has a pending or running occurrence.
	// A schedule that is not alive runs no more until Repair (or Register)
	// restarts its chain.
	Alive bool
	// Err is set when the stored definition does not decode or parse; such
	// a schedule schedules nothing.
	Err error
}

// stored is a definition as read, with the holder of its unique key.
type stored struct {
	name   string
	def    definition
	plan   plan
	err    error
	holder quick.ID
}

// readAll reads every definition and the holder of each one's unique key,
// in one read-only transaction: a range read and one point read per
// schedule (two for a schedule whose task type changed), all in flight at
// once. Snapshot reads: nothing is written on what they see.
func readAll(ctx context.Context, q *quick.Queue) ([]stored, error) {
	var out []stored
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		now := q.Now()
		snap := tr.Snapshot()
		kvs, err := snap.GetRange(defRange(q), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		holders := make([]kv.Future[[]byte], len(kvs))
		prevs := make([]kv.Future[[]byte], len(kvs)) // under PrevTaskType
		for _, p := range kvs {
			name, err := nameOf(q, p.Key)
			if err != nil {
				q.Options().Logger.Warn("cron: skipping a key that is not a schedule's", "key", fmt.Sprintf("%x", p.Key))
				continue
			}
			s := stored{name: name}
			s.def, s.plan, s.err = decodeDefinition(name, p.Value, now)
			if s.def.TaskType != "" {
				holders[len(out)] = snap.Get(holderKey(q, s.def.TaskType, name))
			}
			if s.def.PrevTaskType != "" {
				prevs[len(out)] = snap.Get(holderKey(q, s.def.PrevTaskType, name))
			}
			out = append(out, s)
		}
		for i := range out {
			for _, f := range []kv.Future[[]byte]{holders[i], prevs[i]} {
				if f == nil || !out[i].holder.IsZero() {
					continue
				}
				v, err := f.Get()
				if err != nil {
					return err
				}
				if len(v) == len(quick.ID{}) {
					out[i].holder = quick.ID(v)
				}
			}
		}
		return nil
	})
	return out, err
}

// List returns every schedule, by name, with its pending or running
// occurrence. Cost: one range read of the definitions, a point read per
// schedule, and a quick.Get per live occurrence.
func List(ctx context.Context, q *quick.Queue) ([]Entry, error) {
	all, err := readAll(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("cron: list: %w", err)
	}
	out := make([]Entry, 0, len(all))
	for _, s := range all {
		e := Entry{Schedule: s.def.Schedule, Err: s.err}
		e.Name = s.name
		if !s.holder.IsZero() {
			info, err := q.Get(ctx, s.holder)
			switch {
			case quick.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("cron: list: schedule %q: %w", s.name, err)
			case info.State == quick.StateScheduled || info.State == quick.StateReady || info.State == quick.StateLeased:
				e.NextID, e.State, e.Alive = s.holder, info.State, true
				if env, err := unmarshalEnvelope(info.Payload); err == nil {
					e.Next = env.ScheduledAt
				} else {
					e.Next = info.RunAt
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}
