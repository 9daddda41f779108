package bench

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// The alternative strategies must claim jobs that quick.Enqueue wrote and
// that quick.List and quick.Get still understand, so they speak quick's
// on-disk format directly. quick keeps that format unexported; this file
// mirrors the documented part of it (docs/design.md, "Key layout") and
// layout_test.go pins the mirror against the quick package, so a change of
// format fails a test instead of skewing a benchmark.

// schemaVersion is quick's first key element under the queue's subspace.
const schemaVersion = 1

// normalPrio is quick.Normal as stored in keys; the workloads use only it.
const normalPrio = int64(quick.Normal)

// layout is the subset of quick's key layout the mirror needs.
type layout struct {
	sched, job, ckpt, lease tuple.Subspace
	lanes                   int
}

func newLayout(space tuple.Subspace, lanes int) layout {
	root := space.Sub(int64(schemaVersion))
	return layout{sched: root.Sub("s"), job: root.Sub("j"), ckpt: root.Sub("c"), lease: root.Sub("l"), lanes: lanes}
}

// schedKey is a parsed schedule key S(1,"s",type,lane,prio,vestMs,id).
type schedKey struct {
	TaskType string
	Lane     int
	Priority int64
	VestMs   int64
	ID       quick.ID
}

func (l layout) pack(k schedKey) []byte {
	return l.sched.Pack(tuple.Tuple{k.TaskType, int64(k.Lane), k.Priority, k.VestMs, tuple.UUID(k.ID)})
}

// place builds the key of a job vesting at vestMs, with its lane hashed
// from the key without the lane, as quick does.
func (l layout) place(taskType string, prio, vestMs int64, id quick.ID) schedKey {
	lane := lanes.Of(tuple.Tuple{taskType, prio, vestMs, tuple.UUID(id)}.Pack(), l.lanes)
	return schedKey{TaskType: taskType, Lane: lane, Priority: prio, VestMs: vestMs, ID: id}
}

func (l layout) parse(key []byte) (schedKey, error) {
	t, err := l.sched.Unpack(key)
	if err != nil || len(t) != 5 {
		return schedKey{}, fmt.Errorf("bench: not a schedule key: %x", key)
	}
	tt, ok1 := t[0].(string)
	lane, ok2 := t[1].(int64)
	prio, ok3 := t[2].(int64)
	vest, ok4 := t[3].(int64)
	id, ok5 := t[4].(tuple.UUID)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return schedKey{}, fmt.Errorf("bench: schedule key %v has wrong element types", t)
	}
	return schedKey{TaskType: tt, Lane: int(lane), Priority: prio, VestMs: vest, ID: quick.ID(id)}, nil
}

// laneRange is every schedule key of one lane and priority.
func (l layout) laneRange(taskType string, lane int, prio int64) kv.KeyRange {
	b, e := l.sched.Sub(taskType, int64(lane), prio).Range()
	return kv.KeyRange{Begin: b, End: e}
}

func (l layout) jobKey(id quick.ID) []byte  { return l.job.Pack(tuple.Tuple{tuple.UUID(id)}) }
func (l layout) ckptKey(id quick.ID) []byte { return l.ckpt.Pack(tuple.Tuple{tuple.UUID(id)}) }

// leaseKey is quick's lease index S(1,"l",id): a claimed job's vesting ms
// (a protobuf varint, field 1), so lookup by ID finds the moved key.
func (l layout) leaseKey(id quick.ID) []byte { return l.lease.Pack(tuple.Tuple{tuple.UUID(id)}) }

func leaseIndex(vestMs int64) []byte { return wire.AppendVarint(nil, 1, uint64(vestMs)) }

// schedValue mirrors quick's schedule value (protobuf fields 1-7).
type schedValue struct {
	Attempt     int64
	Token       uint64
	Holder      string
	LeasedAtMs  int64
	MaxAttempts int64
	Flags       uint64
	UniqueKey   string
}

const flagCheckpoint = 1 << 0

func (v schedValue) marshal() []byte {
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
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bench: bad schedule value tag")
		}
		b = b[n:]
		var x uint64
		var raw []byte
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("bench: bad schedule value field %d", num)
		}
		b = b[n:]
		switch num {
		case 1:
			v.Attempt = int64(x)
		case 2:
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
	}
	return nil
}

// replaceRecordFields returns a record with its placement, attempts and last
// error overwritten, as quick's fail rewrites them. Protobuf lets a later
// occurrence of a scalar field override an earlier one, so appending the
// fields is a valid rewrite without decoding the rest of the record; the
// bytes written match a re-encoded record within a few bytes.
func replaceRecordFields(rec []byte, placedMs, lane, attempts int64, lastErr string) []byte {
	// Appended fields override earlier ones (the last one wins), so each
	// is appended even when zero: wire.AppendVarint skips a zero, which
	// left a record's old lane in place when a job moved to lane 0
	// (TestMirrorMatchesQuick failed about once in 16 runs).
	out := append([]byte(nil), rec...)
	out = appendVarintAlways(out, 8, uint64(placedMs))
	out = appendVarintAlways(out, 9, uint64(lane))
	out = protowire.AppendTag(out, 10, protowire.BytesType)
	out = protowire.AppendString(out, lastErr)
	out = appendVarintAlways(out, 13, uint64(attempts))
	return out
}

func appendVarintAlways(b []byte, num protowire.Number, x uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, x)
}
