package lanes

// TODO(issue 21, console): remove this file once ui/ and cmd/quick list
// workers with worker.ListWorkers. It is the read side of the removed
// lanes registry (the membership heartbeats of schema 1's fleet-wide lane
// assignment), kept only so that the console and the CLI compile until
// they are rewritten: no worker writes the registry any more, so every
// read here finds nothing.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Options tune a Registry. The zero value is usable.
type Options struct {
	// HeartbeatPeriod is how often Run beats. Default 1s.
	HeartbeatPeriod time.Duration
	// Timeout is how long an observer must see a member's heartbeat
	// unchanged, on the observer's own clock, before it counts the member
	// dead. Default 5 × HeartbeatPeriod; values under 2 × HeartbeatPeriod
	// are raised to it, since a single late beat must not kill a member.
	Timeout time.Duration
	// ExpireAfter is how long a member must look dead before an observer
	// clears its keys. Default 10 × Timeout; raised to Timeout if lower.
	ExpireAfter time.Duration
	// Replicas is how many live members watch each lane. Default 1.
	Replicas int
	// Clock is the time source: liveness is measured on it, beats report
	// it, and Run takes its ticks from it. Default the real clock.
	Clock clock.Clock
	// Logger receives lane changes, membership changes and beat failures.
	// Default slog.Default().
	Logger *slog.Logger
	// Host is published in each member's Info. Default os.Hostname().
	Host string
}

// withDefaults returns o with zero fields defaulted and bounds applied.
func (o Options) withDefaults() Options {
	if o.HeartbeatPeriod <= 0 {
		o.HeartbeatPeriod = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * o.HeartbeatPeriod
	}
	o.Timeout = max(o.Timeout, 2*o.HeartbeatPeriod)
	if o.ExpireAfter <= 0 {
		o.ExpireAfter = 10 * o.Timeout
	}
	o.ExpireAfter = max(o.ExpireAfter, o.Timeout)
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return o
}

// Registry is the membership of workers, per task type, stored under one
// subspace. It holds no state of its own beyond its configuration: every
// Tracker keeps its own view, so a Registry may be shared by any number of
// Trackers and task types.
type Registry struct {
	db    kv.Database
	space tuple.Subspace
	opts  Options
}

// NewRegistry returns a Registry storing its keys under space, which the
// queue reserves for it.
func NewRegistry(db kv.Database, space tuple.Subspace, opts Options) *Registry {
	return &Registry{db: db, space: space, opts: opts.withDefaults()}
}

// Options returns the Registry's options, defaults applied.
func (r *Registry) Options() Options { return r.opts }

// Key kinds, the last element of a member's keys.
const (
	kindHB   = "hb"
	kindInfo = "info"
)

// typeSpace holds every key of a task type's members.
func (r *Registry) typeSpace(taskType string) tuple.Subspace {
	return r.space.Sub(taskType)
}

// memberSpace holds the keys of one member, so one range clear removes them.
func (r *Registry) memberSpace(taskType, id string) tuple.Subspace {
	return r.space.Sub(taskType, id)
}

func (r *Registry) hbKey(taskType, id string) []byte {
	return r.space.Pack(tuple.Tuple{taskType, id, kindHB})
}

func (r *Registry) infoKey(taskType, id string) []byte {
	return r.space.Pack(tuple.Tuple{taskType, id, kindInfo})
}

// rawMember is one member's keys as read from the database.
type rawMember struct {
	hb, info       []byte
	hasHB, hasInfo bool
}

// parseMembers groups the key-values of a task type's range by member.
// Keys that do not have the (taskType, id, kind) shape are skipped and
// counted, never fatal: a stray key must not stop the heartbeat.
func (r *Registry) parseMembers(taskType string, kvs []kv.KeyValue) (map[string]rawMember, int) {
	ts := r.typeSpace(taskType)
	out := make(map[string]rawMember, len(kvs)/2+1)
	bad := 0
	for _, p := range kvs {
		t, err := ts.Unpack(p.Key)
		if err != nil || len(t) != 2 {
			bad++
			continue
		}
		id, ok1 := t[0].(string)
		kind, ok2 := t[1].(string)
		if !ok1 || !ok2 || id == "" {
			bad++
			continue
		}
		// Values are cloned: the view keeps them across transactions, and an
		// engine may reuse its buffers.
		m := out[id]
		switch kind {
		case kindHB:
			m.hb, m.hasHB = bytes.Clone(p.Value), true
		case kindInfo:
			m.info, m.hasInfo = bytes.Clone(p.Value), true
		default:
			bad++
			continue
		}
		out[id] = m
	}
	return out, bad
}

// MaxMembers bounds the members of a task type one round reads: a
// heartbeat reads at most 2 × MaxMembers keys (a member has two, ≈ 70-byte
// keys with a 33-byte and a ~40-byte value: about 200 B a member, 200 KB at
// the bound). Members sorted after the first MaxMembers IDs are not
// seen by anyone: they still run (each counts itself a candidate in
// Assign), but no one counts them in its share, so their lanes are watched
// twice. A registry past the bound is logged at every round.
const MaxMembers = 1000

// maxMemberKeys is the key limit of one membership read.
const maxMemberKeys = 2 * MaxMembers

// readMembers reads the membership of a task type, at most maxMemberKeys
// keys, with a snapshot read, which adds no read conflict: the heartbeat
// transaction that does it can never fail with not_committed. full is
// false when the read stopped at the limit.
func (r *Registry) readMembers(tr kv.ReadTransaction, taskType string) (m map[string]rawMember, bad int, full bool, err error) {
	b, e := r.typeSpace(taskType).Range()
	kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: maxMemberKeys}).GetSliceWithError()
	if err != nil {
		return nil, 0, false, err
	}
	m, bad = r.parseMembers(taskType, kvs)
	return m, bad, len(kvs) < maxMemberKeys, nil
}

// Snapshot reads a task type's members once (at most MaxMembers), as stored: heartbeat counters,
// reported clocks and published info, sorted by ID. Liveness needs two
// observations over time, so a one-shot reader (the CLI) gets LastChange and
// Live unset; InfoErr says why a member's info did not decode.
func (r *Registry) Snapshot(ctx context.Context, taskType string) ([]Member, error) {
	var out []Member
	err := r.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		raw, _, _, err := r.readMembers(tr, taskType)
		if err != nil {
			return err
		}
		out = out[:0]
		for id, m := range raw {
			mem := Member{ID: id, TaskType: taskType}
			if d := decodeBeat(m.hb); d.wallOK {
				mem.Counter, mem.Clock, mem.Standby = d.counter, d.wall, d.standby
			}
			if m.hasInfo {
				if mem.Info, err = decodeInfo(m.info); err != nil {
					mem.InfoErr = err
				}
			}
			out = append(out, mem)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lanes: read the members of %q: %w", taskType, err)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// maxSnapshotKeys bounds TaskTypes' read: two keys a member.
const maxSnapshotKeys = 20_000

// TaskTypes lists the task types that have members in the registry (read
// from at most 20,000 registry keys).
func (r *Registry) TaskTypes(ctx context.Context) ([]string, error) {
	var out []string
	err := r.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		b, e := r.space.Range()
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: maxSnapshotKeys}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := r.space.Unpack(p.Key)
			if err != nil || len(t) == 0 {
				continue
			}
			if s, ok := t[0].(string); ok && (len(out) == 0 || out[len(out)-1] != s) {
				out = append(out, s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lanes: list task types: %w", err)
	}
	return out, nil
}

// Member is one worker of a task type as an observer sees it.
type Member struct {
	ID       string
	TaskType string
	// Counter is the member's heartbeat counter (0 if unreadable).
	Counter uint64
	// Clock is the member's wall clock at its last beat, as it reported it
	// (zero if unreadable). It is informative only: liveness never uses it.
	Clock time.Time
	// Info is what the member published (zero if absent or malformed).
	Info Info
	// InfoErr is set by Registry.Snapshot when the stored info is malformed.
	InfoErr error
	// LastChange is when, on the observer's clock, the observer first saw
	// the member's current heartbeat value.
	LastChange time.Time
	// Live reports whether LastChange was less than Timeout before the
	// observer's last round.
	Live bool
	// Standby reports that the member stands by: its clock is too far off
	// the others' for it to take lanes (see Tracker.Standby).
	Standby bool
}
