package quick

import (
	"crypto/sha256"
	"fmt"

	"github.com/zeebo/xxh3"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/tuple"
)

// schemaVersion is the first element of the shared state's keys under the
// user's subspace; the jobs themselves live under S (2) (zoneSchema).
const schemaVersion = 1

// The shared state, under the user's subspace S: what is per task type,
// per queue or rare, kept apart from the zones (zkeys, below):
//
//	S (1, "j", id)                            dead letter: the record (deadrecord.go)
//	S (1, "c", id)                            a dead letter's checkpoint bytes
//	S (1, "m", id)                            enqueue marker of builds before one marker per call (PurgeMarkers clears them)
//	S (1, "u", type, uniqueKey)               unique key -> id
//	S (1, "d", type, deadMs, id)              dead-letter index
//	S (1, "dn", type)                         dead-letter count (atomic)
//	S (1, "x", hash)                          quarantined raw entries that did not decode
//	S (1, "xn")                               quarantine count (atomic)
//	S (1, "t", type)                          known task types
//	S (1, "o", id)                            outcome of a waitable job (wait.go)
//	S (1, "f", id)                            finished record of a job with retention (retention.go)
//	S (1, "fx", expireMs, id)                 finished records by expiry, for PurgeFinished (empty values)
//	S (1, "wake", type)                       wake-up key for idle workers
//	S (1, "sleep", type)                      until when idle workers sleep (atomic max, ms)
//	S (1, "pause", type), S (1, "pausev")     paused task types (pause.go)
//	S (1, "cron", ...)                        cron schedules (package cron)
//	S (1, "zc", slot)                         workers' clock samples, 64 slots (package worker)
//	S (1, "wp", id)                           worker presence (package worker)
//	S (1, "tl", type)                         tenant limits: the task type's default (limits.go)
//	S (1, "tl", type, itemSpace)              tenant limits: a tenant's override
//	S (1, "ts", type, itemSpace, ...)         a limited tenant's state: running count "n", slots
//	                                          ("r", leaseDeadlineMs, id), rate "b", parked lanes
//	                                          ("p", prio, lane) (limitgate.go)
//	S (1, "mv", itemSpace, type)              a tenant move, adoption or deletion under way: its step, fence
//	                                          token, destination and cursor (move_record.go)
//	S (1, "tp", minute, type, kind)           fleet throughput: jobs completed (kind 0) and failed (1) per
//	                                          Unix minute, atomic adds once per worker clock round (package worker)
//	S (1, "tr", minute, type, itemSpace)      jobs started per tenant and Unix minute, atomic adds once per
//	                                          worker clock round, at most 1,024 a round (package worker)
//
// S (1, "s", ...) held the schedule keys of the removed schema-1 layout:
// Open refuses a queue that still has one (ErrSchema1).
type keys struct {
	root  tuple.Subspace
	job   tuple.Subspace
	ckpt  tuple.Subspace
	mark  tuple.Subspace
	uniq  tuple.Subspace
	dead  tuple.Subspace
	deadN tuple.Subspace
	quar  tuple.Subspace
	quarN []byte
	types tuple.Subspace
	// schema1Sched is where schema 1 kept its schedule keys; only Open
	// reads it, to refuse such a queue.
	schema1Sched tuple.Subspace
}

func newKeys(space tuple.Subspace) keys {
	root := space.Sub(int64(schemaVersion))
	return keys{
		root:         root,
		job:          root.Sub("j"),
		ckpt:         root.Sub("c"),
		mark:         root.Sub("m"),
		uniq:         root.Sub("u"),
		dead:         root.Sub("d"),
		deadN:        root.Sub("dn"),
		quar:         root.Sub("x"),
		quarN:        root.Pack(tuple.Tuple{"xn"}),
		types:        root.Sub("t"),
		schema1Sched: root.Sub("s"),
	}
}

// jobKey is where a dead letter's record is.
func (k keys) jobKey(id ID) []byte  { return k.job.Pack(tuple.Tuple{tuple.UUID(id)}) }
func (k keys) ckptKey(id ID) []byte { return k.ckpt.Pack(tuple.Tuple{tuple.UUID(id)}) }

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

// zoneSchema is the first element of the jobs' keys under the user's
// subspace (docs/design.md, "Two levels").
const zoneSchema = 2

// The jobs, under the user's subspace S:
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
// cron are shared state under S (1, ...) (keys, above): they are rare or per
// task type.
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

// maxZoneLanes bounds a zone's lane count (package lanes).
const maxZoneLanes = lanes.Max

// laneOfID is a job's lane in a zone of n lanes, where enqueue places it
// (lanes.OfID).
func laneOfID(id ID, n int) int { return lanes.OfID(id, n) }

// pointerKey is a lane's entry in the pointer index, ordered by when the
// lane next has work (ptrMs, see pointerMs) and then by the lane's hash, so
// that entries of one ms (or one second, once vested) are in random order
// and a claim can start reading at a random place among them (acquire).
func (k zkeys) pointerKey(taskType string, prio Priority, ptrMs, zhash int64, lane int) []byte {
	return k.ptr.Pack(tuple.Tuple{taskType, int64(prio), ptrMs, laneHash(zhash, lane), int64(lane)})
}

// laneHash spreads the lanes of one zone over the pointer index's hash
// space (lanes.Spread).
func laneHash(zhash int64, lane int) int64 { return lanes.Spread(zhash, lane) }

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
