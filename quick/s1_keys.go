package quick

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/tuple"
)

// schemaVersion is the first element under the user's subspace, so that a
// later layout can live beside this one during a migration.
const schemaVersion = 1

// The key layout, under the user's subspace S (docs/design.md explains it):
//
//	S (1, "cfg")                              queue configuration
//	S (1, "s", type, lane, prio, vestMs, id)  schedule key: moves on claim/extend
//	S (1, "j", id)                            record: payload and metadata
//	S (1, "l", id)                            lease index: vesting ms of a claimed job's key
//	S (1, "c", id)                            checkpoint bytes
//	S (1, "m", id)                            enqueue marker (idempotent retries)
//	S (1, "u", type, uniqueKey)               unique key -> id
//	S (1, "d", type, deadMs, id)              dead-letter index
//	S (1, "dn", type)                         dead-letter count (atomic)
//	S (1, "x", hash)                          quarantined raw entries that did not decode
//	S (1, "xn")                               quarantine count (atomic)
//	S (1, "t", type)                          known task types
//	S (1, "w", ...)                           worker registry (package lanes)
//	S (1, "wake", type)                       wake-up key for idle workers
//	S (1, "sleep", type)                      until when idle workers sleep (atomic max, ms)
//	S (1, "cron", ...)                        cron schedules (package cron)
//	S (1, "zc", slot)                         zones workers' clock samples, 64 slots (package worker)
type keys struct {
	root  tuple.Subspace
	sched tuple.Subspace
	job   tuple.Subspace
	lease tuple.Subspace
	ckpt  tuple.Subspace
	mark  tuple.Subspace
	uniq  tuple.Subspace
	dead  tuple.Subspace
	deadN tuple.Subspace
	quar  tuple.Subspace
	quarN []byte
	types tuple.Subspace
	cfg   []byte
}

func newKeys(space tuple.Subspace) keys {
	root := space.Sub(int64(schemaVersion))
	return keys{
		root:  root,
		sched: root.Sub("s"),
		job:   root.Sub("j"),
		lease: root.Sub("l"),
		ckpt:  root.Sub("c"),
		mark:  root.Sub("m"),
		uniq:  root.Sub("u"),
		dead:  root.Sub("d"),
		deadN: root.Sub("dn"),
		quar:  root.Sub("x"),
		quarN: root.Pack(tuple.Tuple{"xn"}),
		types: root.Sub("t"),
		cfg:   root.Pack(tuple.Tuple{"cfg"}),
	}
}

// laneOf hashes the schedule key without its lane: moving a job's vesting
// time moves it to another lane, so no job stays behind an unlucky lane.
func laneOf(taskType string, prio Priority, vestMs int64, id ID, n int) int {
	return lanes.Of(tuple.Tuple{taskType, int64(prio), vestMs, tuple.UUID(id)}.Pack(), n)
}

// schedKey is a parsed schedule key.
type schedKey struct {
	TaskType string
	Lane     int
	Priority Priority
	VestMs   int64
	ID       ID
}

func (k keys) schedKey(taskType string, lane int, prio Priority, vestMs int64, id ID) []byte {
	return k.sched.Pack(tuple.Tuple{taskType, int64(lane), int64(prio), vestMs, tuple.UUID(id)})
}

// place builds the schedule key of a job vesting at vest, choosing its lane.
func (k keys) place(taskType string, prio Priority, vest time.Time, id ID, lanes int) (key []byte, lane int, vestMs int64) {
	vestMs = vest.UnixMilli()
	lane = laneOf(taskType, prio, vestMs, id, lanes)
	return k.schedKey(taskType, lane, prio, vestMs, id), lane, vestMs
}

// placeKey is place's key alone.
func (k keys) placeKey(taskType string, prio Priority, vest time.Time, id ID, lanes int) []byte {
	key, _, _ := k.place(taskType, prio, vest, id, lanes)
	return key
}

func (k keys) parseSched(key []byte) (schedKey, error) {
	t, err := k.sched.Unpack(key)
	if err != nil {
		return schedKey{}, fmt.Errorf("%w: schedule key: %w", ErrCorrupt, err)
	}
	if len(t) != 5 {
		return schedKey{}, fmt.Errorf("%w: schedule key has %d elements, want 5", ErrCorrupt, len(t))
	}
	tt, ok1 := t[0].(string)
	lane, ok2 := t[1].(int64)
	prio, ok3 := t[2].(int64)
	vest, ok4 := t[3].(int64)
	id, ok5 := t[4].(tuple.UUID)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return schedKey{}, fmt.Errorf("%w: schedule key %v has wrong element types", ErrCorrupt, t)
	}
	return schedKey{TaskType: tt, Lane: int(lane), Priority: Priority(prio), VestMs: vest, ID: ID(id)}, nil
}

// laneRange is every schedule key of one lane and priority of a task type.
func (k keys) laneRange(taskType string, lane int, prio Priority) kv.KeyRange {
	b, e := k.sched.Sub(taskType, int64(lane), int64(prio)).Range()
	return kv.KeyRange{Begin: b, End: e}
}

// laneAll is every schedule key of one lane of a task type, all priorities.
func (k keys) laneAll(taskType string, lane int) kv.KeyRange {
	b, e := k.sched.Sub(taskType, int64(lane)).Range()
	return kv.KeyRange{Begin: b, End: e}
}

func (k keys) jobKey(id ID) []byte  { return k.job.Pack(tuple.Tuple{tuple.UUID(id)}) }
func (k keys) ckptKey(id ID) []byte { return k.ckpt.Pack(tuple.Tuple{tuple.UUID(id)}) }

// leaseKey indexes where a claimed job's schedule key is: its value is the
// key's vesting time, from which the lane follows (laneOf), so Get and
// Cancel find a leased job with point reads.
func (k keys) leaseKey(id ID) []byte { return k.lease.Pack(tuple.Tuple{tuple.UUID(id)}) }

// quarKey is where a raw entry that did not decode is kept, named by a hash
// of its key (a raw key may be up to 10 kB; the hash keeps this one short).
func (k keys) quarKey(raw []byte) []byte {
	h := sha256.Sum256(raw)
	return k.quar.Pack(tuple.Tuple{h[:16]})
}
func (k keys) markKey(id ID) []byte { return k.mark.Pack(tuple.Tuple{tuple.UUID(id)}) }
func (k keys) uniqKey(taskType, unique string) []byte {
	return k.uniq.Pack(tuple.Tuple{taskType, unique})
}
func (k keys) deadKey(taskType string, deadMs int64, id ID) []byte {
	return k.dead.Pack(tuple.Tuple{taskType, deadMs, tuple.UUID(id)})
}
func (k keys) deadCountKey(taskType string) []byte { return k.deadN.Pack(tuple.Tuple{taskType}) }
func (k keys) typeKey(taskType string) []byte      { return k.types.Pack(tuple.Tuple{taskType}) }

// The sleep/wake keys are shared with worker through internal/wake.
func (k keys) wakeKey(taskType string) []byte  { return wake.WakeKey(k.root, taskType) }
func (k keys) sleepKey(taskType string) []byte { return wake.SleepKey(k.root, taskType) }

func rangeOf(s tuple.Subspace) kv.KeyRange {
	b, e := s.Range()
	return kv.KeyRange{Begin: b, End: e}
}
