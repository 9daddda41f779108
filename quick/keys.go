package quick

import (
	"fmt"

	"github.com/zeebo/xxh3"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// zoneSchema is the first element of the zones layout's keys under the
// user's subspace: schema 1 (the lanes layout) stays beside it and drains
// while new jobs go to zones (docs/design.md, "Two levels").
const zoneSchema = 2

// The zones layout (schema 2), under the user's subspace S:
//
//	S (2, "p", type, prio, ptrMs, laneHash, lane)  pointer index: one entry per lane of a zone that holds jobs
//	                                               (ptrMs: vesting ms, or its second when vested at write;
//	                                               laneHash: hash of zone and lane; pointer.go)
//	S (2, "m", id)                                 enqueue marker, one per enqueue transaction
//	S (2, "i", id)                                 lookup index of a trackable job (where its key is)
//	Z = ZoneSpace(itemSpace) + (type)              a zone: one (tenant, task type) queue
//	                                               (default ZoneSpace: S (2, "z", itemSpace))
//	Z (0, prio, lane, vestMs, id)                  job key: the whole job, payload inline
//	Z (1, prio, lane)                              lane state: where the lane's pointer is, who leases it
//	Z (2)                                          zone meta: lane count
//	Z (3, id)                                      payload over InlinePayload bytes
//	Z (4, id)                                      checkpoint over InlinePayload bytes
//	Z (5, prio, lane)                              short-job hand-out mark: holder's token, last job handed out
//
// Dead letters, quarantine, unique keys, outcomes, task types, wake keys and
// cron stay where schema 1 keeps them (S (1, ...)): they are rare or per
// task type, and sharing them keeps one dead-letter list per task type.
type zkeys struct {
	root  tuple.Subspace // S (2)
	ptr   tuple.Subspace // S (2, "p")
	mark  tuple.Subspace // S (2, "m")
	index tuple.Subspace // S (2, "i")
	zones tuple.Subspace // S (2, "z"): default home of zones
}

func newZKeys(space tuple.Subspace) zkeys {
	root := space.Sub(int64(zoneSchema))
	return zkeys{
		root:  root,
		ptr:   root.Sub("p"),
		mark:  root.Sub("m"),
		index: root.Sub("i"),
		zones: root.Sub("z"),
	}
}

// Elements under a zone Z.
const (
	zJobs    = 0
	zLane    = 1
	zMeta    = 2
	zBlob    = 3
	zCkpt    = 4
	zHandout = 5 // (5, prio, lane): a short-job holder's hand-out mark (short.go)
)

// zone is one (tenant, task type) queue: its key prefix and the names that
// led to it.
type zone struct {
	space     tuple.Subspace
	taskType  string
	itemSpace string
	hash      int64 // xxh3 of the prefix: orders pointers of one vesting ms
}

func newZone(space tuple.Subspace, taskType, itemSpace string) zone {
	return zone{space: space, taskType: taskType, itemSpace: itemSpace, hash: zoneHash(space.Bytes())}
}

func zoneHash(prefix []byte) int64 { return int64(xxh3.Hash(prefix)) }

// zoneOf returns the zone of a task type and item space: under
// Options.ZoneSpace(itemSpace) when set, else under S (2, "z", itemSpace).
func (q *Queue) zoneOf(taskType, itemSpace string) zone {
	base := q.zk.zones.Sub(itemSpace)
	if q.opts.ZoneSpace != nil && !mutant.On("quick.zone-space") {
		base = q.opts.ZoneSpace(itemSpace)
	}
	return newZone(base.Sub(taskType), taskType, itemSpace)
}

// laneRef names one lane of one zone at one priority: the unit a pointer
// stands for and a worker leases.
type laneRef struct {
	z    zone
	prio Priority
	lane int
}

func (l laneRef) String() string {
	return fmt.Sprintf("%s/%q/%s/lane %d", l.z.taskType, l.z.itemSpace, l.prio, l.lane)
}

func (z zone) jobKey(prio Priority, lane int, vestMs int64, id ID) []byte {
	return z.space.Pack(tuple.Tuple{int64(zJobs), int64(prio), int64(lane), vestMs, tuple.UUID(id)})
}

// jobs is every job key of the zone.
func (z zone) jobs() kv.KeyRange { return rangeOf(z.space.Sub(int64(zJobs))) }

// laneRange is every job key of one lane, in vesting order.
func (l laneRef) laneRange() kv.KeyRange {
	return rangeOf(l.z.space.Sub(int64(zJobs), int64(l.prio), int64(l.lane)))
}

func (l laneRef) stateKey() []byte {
	return l.z.space.Pack(tuple.Tuple{int64(zLane), int64(l.prio), int64(l.lane)})
}

func (l laneRef) handoutKey() []byte {
	return l.z.space.Pack(tuple.Tuple{int64(zHandout), int64(l.prio), int64(l.lane)})
}

func (l laneRef) jobKey(vestMs int64, id ID) []byte { return l.z.jobKey(l.prio, l.lane, vestMs, id) }

func (z zone) metaKey() []byte      { return z.space.Pack(tuple.Tuple{int64(zMeta)}) }
func (z zone) blobKey(id ID) []byte { return z.space.Pack(tuple.Tuple{int64(zBlob), tuple.UUID(id)}) }
func (z zone) ckptKey(id ID) []byte { return z.space.Pack(tuple.Tuple{int64(zCkpt), tuple.UUID(id)}) }

// zjobKey is a parsed job key.
type zjobKey struct {
	Priority Priority
	Lane     int
	VestMs   int64
	ID       ID
}

func (z zone) parseJobKey(key []byte) (zjobKey, error) {
	t, err := z.space.Unpack(key)
	if err != nil {
		return zjobKey{}, fmt.Errorf("%w: job key: %w", ErrCorrupt, err)
	}
	if len(t) != 5 {
		return zjobKey{}, fmt.Errorf("%w: job key has %d elements, want 5", ErrCorrupt, len(t))
	}
	kind, ok0 := t[0].(int64)
	prio, ok1 := t[1].(int64)
	lane, ok2 := t[2].(int64)
	vest, ok3 := t[3].(int64)
	id, ok4 := t[4].(tuple.UUID)
	if !ok0 || kind != zJobs || !ok1 || !ok2 || !ok3 || !ok4 || lane < 0 || lane > maxZoneLanes {
		return zjobKey{}, fmt.Errorf("%w: job key %v has wrong elements", ErrCorrupt, t)
	}
	p, err := Priority(prio).normalize()
	if err != nil || Priority(prio) != p {
		return zjobKey{}, fmt.Errorf("%w: job key %v has priority %d", ErrCorrupt, t, prio)
	}
	return zjobKey{Priority: p, Lane: int(lane), VestMs: vest, ID: ID(id)}, nil
}

// parseStateLane returns the lane of a lane state key Z (1, prio, lane).
func (z zone) parseStateLane(key []byte) (int, bool) {
	t, err := z.space.Unpack(key)
	if err != nil || len(t) != 3 {
		return 0, false
	}
	kind, ok0 := t[0].(int64)
	lane, ok1 := t[2].(int64)
	if !ok0 || kind != zLane || !ok1 || lane < 0 || lane > maxZoneLanes {
		return 0, false
	}
	return int(lane), true
}

// maxZoneLanes bounds a zone's lane count: lanes are hashed with laneOfID.
const maxZoneLanes = 1024

// laneOfID is a job's lane in a zone of n lanes, where enqueue places it.
// It depends on the ID only, so a zone whose lane count changed places new
// jobs by the new count while the old lanes drain; a job leaves its lane
// only when a claim splits a deep lane (split.go), and its lane always has
// a pointer while it holds the job.
func laneOfID(id ID, n int) int {
	if n <= 1 {
		return 0
	}
	return int(xxh3.Hash(id[:]) % uint64(n))
}

// pointerKey is a lane's entry in the pointer index, ordered by when the
// lane next has work (ptrMs, see pointerMs) and then by the lane's hash, so
// that entries of one ms (or one second, once vested) are in random order
// and a claim can start reading at a random place among them (acquire).
func (k zkeys) pointerKey(taskType string, prio Priority, ptrMs, zhash int64, lane int) []byte {
	return k.ptr.Pack(tuple.Tuple{taskType, int64(prio), ptrMs, laneHash(zhash, lane), int64(lane)})
}

// laneHash spreads the lanes of one zone over the hash space: with the
// zone's hash alone, a zone's lanes would sit side by side, and a claim
// starting at a random hash would nearly always land before lane 0 of a
// single busy zone. Lane 0 keeps the zone's hash.
func laneHash(zhash int64, lane int) int64 {
	return int64(uint64(zhash) + uint64(lane)*0x9E3779B97F4A7C15)
}

// pointersUntil is a task type's pointers of one priority vesting before
// untilMs (exclusive); untilMs < 0 means all of them.
func (k zkeys) pointersUntil(taskType string, prio Priority, untilMs int64) kv.KeyRange {
	s := k.ptr.Sub(taskType, int64(prio))
	b, e := s.Range()
	if untilMs >= 0 {
		e = s.Pack(tuple.Tuple{untilMs})
	}
	return kv.KeyRange{Begin: b, End: e}
}

// pointersFrom is a task type's pointers of one priority in the bucket
// [bucketMs, bucketMs+pointerBucketMs) from lane hash h on: where a claim
// starts reading the oldest vested bucket (acquire).
func (k zkeys) pointersFrom(taskType string, prio Priority, bucketMs, h int64) kv.KeyRange {
	s := k.ptr.Sub(taskType, int64(prio))
	return kv.KeyRange{Begin: s.Pack(tuple.Tuple{bucketMs, h}), End: s.Pack(tuple.Tuple{bucketMs + pointerBucketMs})}
}

// pointerEntry is a parsed pointer index entry.
type pointerEntry struct {
	key      []byte
	TaskType string
	Priority Priority
	PtrMs    int64
	ZoneHash int64
	Lane     int
	Value    pointerValue
}

func (k zkeys) parsePointer(kvp kv.KeyValue) (pointerEntry, error) {
	t, err := k.ptr.Unpack(kvp.Key)
	if err != nil {
		return pointerEntry{}, fmt.Errorf("%w: pointer key: %w", ErrCorrupt, err)
	}
	if len(t) != 5 {
		return pointerEntry{}, fmt.Errorf("%w: pointer key has %d elements, want 5", ErrCorrupt, len(t))
	}
	tt, ok0 := t[0].(string)
	prio, ok1 := t[1].(int64)
	ms, ok2 := t[2].(int64)
	lh, ok3 := t[3].(int64)
	lane, ok4 := t[4].(int64)
	if !ok0 || !ok1 || !ok2 || !ok3 || !ok4 || lane < 0 || lane > maxZoneLanes {
		return pointerEntry{}, fmt.Errorf("%w: pointer key %v has wrong elements", ErrCorrupt, t)
	}
	p := pointerEntry{key: kvp.Key, TaskType: tt, Priority: Priority(prio), PtrMs: ms, Lane: int(lane)}
	if err := p.Value.unmarshal(kvp.Value); err != nil {
		return pointerEntry{}, err
	}
	if len(p.Value.Zone) == 0 {
		return pointerEntry{}, fmt.Errorf("%w: pointer %v names no zone", ErrCorrupt, t)
	}
	p.ZoneHash = zoneHash(p.Value.Zone)
	if laneHash(p.ZoneHash, p.Lane) != lh {
		return pointerEntry{}, fmt.Errorf("%w: pointer %v names a zone that does not match its hash", ErrCorrupt, t)
	}
	return p, nil
}

// lane returns the lane a pointer entry stands for.
func (p pointerEntry) lane() laneRef {
	return laneRef{
		z:    zone{space: tuple.NewSubspace(p.Value.Zone), taskType: p.TaskType, itemSpace: p.Value.ItemSpace, hash: p.ZoneHash},
		prio: p.Priority,
		lane: p.Lane,
	}
}

func (k zkeys) markKey(id ID) []byte  { return k.mark.Pack(tuple.Tuple{tuple.UUID(id)}) }
func (k zkeys) indexKey(id ID) []byte { return k.index.Pack(tuple.Tuple{tuple.UUID(id)}) }
