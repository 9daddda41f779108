package quick

// TODO(issue 21, surfaces): remove this file. Schema 1's schedule keys and
// values, kept only so that the inspection code that still reads them
// (s1_inspect.go: List, LaneCounts, lookup) compiles until it is rewritten
// for the one layout. Nothing writes these keys any more, and Open refuses
// a queue that holds any (ErrSchema1), so every read here finds nothing.

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/tuple"
)

// legacyLanes is the lane count schema-1 queues had by default.
const legacyLanes = 16

func (k keys) sched() tuple.Subspace { return k.schema1Sched }

// leaseKey is the removed schema-1 lease index.
func (k keys) leaseKey(id ID) []byte { return k.root.Sub("l").Pack(tuple.Tuple{tuple.UUID(id)}) }

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
	return k.schema1Sched.Pack(tuple.Tuple{taskType, int64(lane), int64(prio), vestMs, tuple.UUID(id)})
}

func (k keys) parseSched(key []byte) (schedKey, error) {
	t, err := k.schema1Sched.Unpack(key)
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
	b, e := k.schema1Sched.Sub(taskType, int64(lane), int64(prio)).Range()
	return kv.KeyRange{Begin: b, End: e}
}

// laneAll is every schedule key of one lane of a task type, all priorities.
func (k keys) laneAll(taskType string, lane int) kv.KeyRange {
	b, e := k.schema1Sched.Sub(taskType, int64(lane)).Range()
	return kv.KeyRange{Begin: b, End: e}
}

// schedValue is the value of a schedule key: the small part of a job that
// moves with every claim and lease extension.
type schedValue struct {
	Attempt     int64  // runs started, counted at claim
	Token       uint64 // lease token; 0 when not leased
	Holder      string // worker holding the lease
	LeasedAtMs  int64
	MaxAttempts int64
	Flags       uint64
	UniqueKey   string
}

func (v *schedValue) hasCheckpoint() bool { return v.Flags&flagCheckpoint != 0 }

func (v *schedValue) marshal() []byte {
	b := make([]byte, 0, 32+len(v.Holder)+len(v.UniqueKey))
	b = wire.AppendVarint(b, 1, uint64(v.Attempt))
	if v.Token != 0 {
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, v.Token)
	}
	b = wire.AppendString(b, 3, v.Holder)
	b = wire.AppendVarint(b, 4, uint64(v.LeasedAtMs))
	b = wire.AppendVarint(b, 5, uint64(v.MaxAttempts))
	b = wire.AppendVarint(b, 6, v.Flags)
	b = wire.AppendString(b, 7, v.UniqueKey)
	return b
}

func (v *schedValue) unmarshal(b []byte) error {
	*v = schedValue{}
	return walkValue(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			v.Attempt = int64(x)
		case 2:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: token has wire type %d", ErrCorrupt, typ)
			}
			v.Token = x
		case 3:
			v.Holder = string(raw)
		case 4:
			v.LeasedAtMs = int64(x)
		case 5:
			v.MaxAttempts = int64(x)
		case 6:
			v.Flags = x
		case 7:
			v.UniqueKey = string(raw)
		}
		return nil
	})
}

func decodeLeaseIndex(b []byte) (int64, error) {
	var ms int64
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
		if num == 1 {
			ms = int64(x)
		}
		return nil
	})
	return ms, err
}
