package quick

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/internal/txn"
	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
)

// Enqueue: every job goes into the zone of its item space and task type.
//
// A job is one key, Z (0, prio, lane, vestMs, id), whose value (zjobValue)
// holds everything a claim needs, payload included up to InlinePayload
// bytes: enqueue costs one set per job. The lane is laneOfID(id, n), where n
// is the zone's lane count (zone meta Z (2), read through a snapshot, so
// that resizing a zone never makes enqueues conflict), and the job keeps
// that lane for life. Every lane a transaction places a job in is covered
// (pointer.go): its lane state is read serializably and a pointer is
// created or pulled earlier when needed.
//
// Idempotency costs one key per enqueue transaction, not per job: the
// marker S (2, "m", id) named by the transaction's first job, written with
// the jobs and read by every attempt (serializable). Its value lists
// exactly the IDs that transactions under that name stored (markedIDs), and
// is written only by a transaction that stores one: an attempt that finds
// it knows which of its jobs were committed before (by an earlier attempt
// of this call that reported commit_unknown_result, or by an earlier call
// with the same first ID) and stores only the others. A job that was not
// stored (its unique key held) is never listed, so enqueueing it later is
// not answered "duplicate". PurgeMarkers clears markers older
// than IdempotencyWindow with one range clear. With
// Options.AutomaticIdempotency, Enqueue's own transactions also set FDB's
// automatic_idempotency, which resolves a lost commit reply in the client;
// the marker stays, since the option leaves a timeout or cancellation
// striking the commit unresolved.
//
// Unique keys are shared state under schema version 1, S (1, "u", type, key), with
// the job ID as value. A live job has no record to say whether it is
// still pending, so its unique key is cleared by the transaction that
// finishes the job (complete, dead letter, cancel): a unique key whose ID
// has no record is held by a live job; one whose record is a dead
// letter is free.

// zenqueueCall is what one attempt of an enqueue transaction needs besides
// the jobs.
type zenqueueCall struct {
	// given[i] is set when job i's ID was fixed before the retry loop (by
	// the caller, or by Enqueue): only such jobs can be recognised as
	// committed by a retry.
	given []bool
	// noMarker: the transaction uses FDB's automatic idempotency instead.
	noMarker bool
	// prev is the outcome of an earlier attempt of this call that may have
	// committed (nil otherwise), and prevKeys the job keys it wrote.
	prev     []Enqueued
	prevKeys [][]byte
	// wrote collects the job keys this attempt writes.
	wrote [][]byte
	// woken lists the task types whose wake key this attempt bumped: once
	// it commits, this process's workers of those types are told at once
	// (internal/wake, Notify), without waiting for the watch.
	woken []string
	// contended is set when the attempt before this one failed with a
	// conflict, and prevLanes holds the lane counts that attempt read, by
	// zone prefix; lanes holds this attempt's (lanestate.go, growth on
	// contention).
	contended bool
	prevLanes map[string]int
	lanes     map[string]int
}

// markerID is the ID that names the call's marker: its first job with a
// fixed ID. ok is false when no job has one (nothing to recognise).
func (c *zenqueueCall) markerID(jobs []job) (ID, bool) {
	for i, j := range jobs {
		if c.given[i] {
			return j.ID, true
		}
	}
	return ID{}, false
}

// zenqueue is Enqueue: batches of about
// enqueueBatchBytes, each in its own transaction.
func (q *Queue) zenqueue(ctx context.Context, now time.Time, prepared []job) ([]Enqueued, error) {
	var out []Enqueued
	for start := 0; start < len(prepared); {
		end, size := start, 0
		lanes := map[string]bool{}
		for end < len(prepared) && end-start < maxMarkedIDs {
			n := q.zenqueueCost(prepared[end], lanes)
			if end > start && size+n > enqueueBatchBytes {
				break
			}
			size += n
			end++
		}
		batch := prepared[start:end]
		given := make([]bool, len(batch))
		for i := range given {
			given[i] = true // fixed by prepare, before the loop
		}
		var res []Enqueued
		var wrote [][]byte
		var woken []string
		var prevLanes map[string]int
		conflicts := 0
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			// The marker stays even with FDB's automatic idempotency: the
			// option resolves a lost commit reply (1021), not a timeout or
			// a cancellation that strikes the commit in flight (1031,
			// 1025), and a retry that then misses its own keys (a worker
			// claimed the job meanwhile) would enqueue it twice
			// (TestZoneEnqueueAutomaticIdempotencyTimeoutThenClaimed).
			q.setAutomaticIdempotency(tr)
			call := zenqueueCall{given: given, prevLanes: prevLanes}
			if maybeCommitted {
				call.prev, call.prevKeys = res, wrote
			}
			if c := txn.ConflictsOf(tr); c > conflicts {
				call.contended, conflicts = true, c
			}
			r, err := q.zenqueueTx(tr, now, batch, &call)
			prevLanes = call.lanes
			if err != nil {
				return err
			}
			// Kept only from attempts that ran to their commit: one of
			// them is what a later attempt may find committed.
			res, wrote, woken = r, call.wrote, call.woken
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("quick: enqueue: %w", err)
		}
		for _, t := range woken {
			wake.Notify(q.db, q.k.root.Bytes(), t)
		}
		out = append(out, res...)
		start = end
	}
	return out, nil
}

// Per-entry overheads of FDB's size measure of a transaction
// (GetApproximateSize; kv/memkv/reads.go): a mutation, a conflict range.
const (
	sizeMutation = 56
	sizeConflict = 32
)

// setSize is what a set of key to a value of n bytes adds to FDB's size
// of a transaction: the mutation and its write conflict range.
func setSize(key []byte, n int) int {
	return len(key) + n + sizeMutation + sizeConflict + 2*len(key) + 1
}

// readSize is what a serializable read of key adds: its conflict range.
func readSize(key []byte) int { return sizeConflict + 2*len(key) + 1 }

// zenqueueCost bounds what job j adds to its enqueue transaction by FDB's
// own size measure (issue 22: counting the payload and names once per job,
// batches over many tenants reached 1–2.5 MB where Enqueue promises about
// enqueueBatchBytes): its key and value (the payload inline or in its
// blob), its lookup index entry, its unique key (read and set) and its ID in
// the marker; and, for the batch's first job in its lane (lanes holds the
// lanes seen), the lane state (read and set), its hand-out mark (read) and
// its pointer (cleared and set), each carrying the zone's name.
func (q *Queue) zenqueueCost(j job, lanes map[string]bool) int {
	z := q.zoneOf(j.TaskType, j.ItemSpace)
	l := laneRef{z: z, prio: j.Priority, lane: laneOfID(j.ID, q.opts.ZoneLanes)}
	zb := len(z.space.Bytes())
	n := setSize(l.jobKey(j.runAt.UnixMilli(), j.ID), 64+len(j.Payload)+len(j.UniqueKey)+len(j.trace)) + 16 // its ID in the marker
	if len(j.Payload) > InlinePayload {
		n += setSize(z.blobKey(j.ID), 0)
	}
	n += setSize(q.zk.indexKey(j.ID), 32+zb+len(j.ItemSpace)+len(j.TaskType))
	if j.UniqueKey != "" {
		uk := q.k.uniqKey(j.TaskType, j.UniqueKey)
		n += readSize(uk) + setSize(uk, len(j.ID))
	}
	if k := string(l.stateKey()); !lanes[k] {
		lanes[k] = true
		pk := q.pointerKeyOf(l, j.runAt.UnixMilli())
		n += readSize(l.stateKey()) + setSize(l.stateKey(), 32) + readSize(l.handoutKey()) +
			setSize(pk, 16+zb+len(j.ItemSpace)) + setSize(pk, len(pk)) // the old pointer's clear, as big
	}
	return n
}

// setAutomaticIdempotency sets FDB's automatic_idempotency on tr when
// Options.AutomaticIdempotency asks for it and the engine has it (the kv
// option is asserted, so engines without it fall back to the marker). It
// reports whether the option is set.
func (q *Queue) setAutomaticIdempotency(tr kv.Transaction) bool {
	if !q.opts.AutomaticIdempotency {
		return false
	}
	o, ok := tr.Options().(interface{ SetAutomaticIdempotency() error })
	return ok && o.SetAutomaticIdempotency() == nil
}

// zenqueueTx writes jobs into their zones in tr.
//
// Keys: reads (one round trip, two when a zone's lane count differs from
// Options.ZoneLanes) S (2, "m", id) of the call's first fixed ID, the zone
// meta Z (2) of each zone (snapshot), the lane state Z (1, prio, lane) of
// each lane placed in (for short-job task types with its hand-out mark
// Z (5, prio, lane), serializable: readHandoutMarks), S (1, "u", type, key) for unique jobs (and the
// holder's record S (1, "j", id) when the key is taken), S (1, "sleep",
// type) for jobs vesting now and, until this process has seen a task type
// registered, S (1, "t", type) (snapshot). Writes per job Z (0, prio,
// lane, vestMs, id), Z (3, id) for a payload over InlinePayload,
// S (1, "u", ...) for unique jobs and S (2, "i", id) for trackable ones;
// per transaction the marker, and per lane the lane state and pointer
// only when the lane had none or its pointer vested later (applyCover).
func (q *Queue) zenqueueTx(tr kv.Transaction, now time.Time, jobs []job, call *zenqueueCall) ([]Enqueued, error) {
	// Issue every read before waiting on any.
	var markKey []byte
	var mark kv.Future[[]byte]
	if id, ok := call.markerID(jobs); ok && !call.noMarker {
		markKey = q.zk.markKey(id)
		mark = tr.Get(markKey)
	}
	var prevKeys []kv.Future[[]byte]
	if call.prev != nil && markKey == nil {
		// Automatic idempotency left an outcome unknown (a timeout or a
		// cancellation in flight): the keys the attempt wrote tell.
		for _, k := range call.prevKeys {
			prevKeys = append(prevKeys, tr.Get(k))
		}
	}
	uniq := make([]kv.Future[[]byte], len(jobs))
	for i, j := range jobs {
		if j.UniqueKey != "" {
			uniq[i] = tr.Get(q.k.uniqKey(j.TaskType, j.UniqueKey))
		}
	}
	types := map[string]kv.Future[[]byte]{}
	for _, j := range jobs {
		if _, known := q.knownTypes.Load(j.TaskType); !known && types[j.TaskType] == nil {
			types[j.TaskType] = tr.Snapshot().Get(q.k.typeKey(j.TaskType))
		}
	}
	sleepers := q.readSleepers(tr, now, jobs)
	zones := make([]zone, len(jobs))
	metas := map[string]kv.Future[[]byte]{}
	for i, j := range jobs {
		zones[i] = q.zoneOf(j.TaskType, j.ItemSpace)
		k := string(zones[i].space.Bytes())
		if metas[k] == nil {
			metas[k] = tr.Snapshot().Get(zones[i].metaKey())
		}
	}
	// Lane states are read for the lanes of the default count now, in
	// this round trip; a zone resized away from it costs a second one.
	var cov coverer
	for i, j := range jobs {
		cov.add(laneRef{z: zones[i], prio: j.Priority, lane: laneOfID(j.ID, q.opts.ZoneLanes)}, j.runAt.UnixMilli())
	}
	cov.read(tr)
	marks := q.readHandoutMarks(tr, &cov)

	var listed map[ID]bool
	if mark != nil {
		v, err := mark.Get()
		if err != nil {
			return nil, err
		}
		if v != nil {
			id, _ := call.markerID(jobs)
			listed = q.markedIDs(id, v)
			if call.prevCommitted(listed) {
				return call.prev, nil // the earlier attempt committed
			}
		}
	}
	for _, f := range prevKeys {
		v, err := f.Get()
		if err != nil {
			return nil, err
		}
		if v != nil {
			return call.prev, nil // the earlier attempt committed
		}
	}
	lanesOf := map[string]int{}
	for k, f := range metas {
		n, err := q.zoneLanes(f)
		if err != nil {
			return nil, err
		}
		lanesOf[k] = n
	}
	call.lanes = lanesOf
	r := zreads{markKey: markKey, listed: listed, uniq: uniq, types: types, sleepers: sleepers, guessed: &cov, marks: marks}
	return q.zplace(tr, now, jobs, zones, lanesOf, call, r)
}

// maxMarkedIDs bounds the IDs one enqueue marker lists (16 bytes each,
// far under FDB's 100 kB value limit): Enqueue's batches hold at most as
// many jobs, and EnqueueTx refuses more jobs given IDs in one call.
const maxMarkedIDs = 4096

// markIDsField is the field of a enqueue marker that lists the IDs
// stored under it, 16 bytes each (requeueMarkField marks a requeue).
const markIDsField = 1

// markedIDs returns the IDs a marker named by id lists as stored: those of
// its markIDsField, and id itself for a requeue's marker (requeue.go). A
// marker that does not decode lists none (logged): its jobs may then be
// stored again, none is lost.
func (q *Queue) markedIDs(id ID, v []byte) map[ID]bool {
	out := map[ID]bool{}
	err := wire.Walk(v, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		switch {
		case num == markIDsField && typ == protowire.BytesType && len(raw)%len(ID{}) == 0:
			for i := 0; i < len(raw); i += len(ID{}) {
				out[ID(raw[i:i+len(ID{})])] = true
			}
		case num == requeueMarkField:
			out[id] = true
		}
		return nil
	})
	if err != nil {
		q.opts.Logger.Warn("quick: an enqueue marker does not decode; its jobs are taken as not stored", "id", id, "err", err)
		return map[ID]bool{}
	}
	return out
}

// markValue is a marker's value listing stored (this transaction's new
// IDs) and then those of before (listed) that still fit in maxMarkedIDs.
func markValue(stored []ID, listed map[ID]bool) []byte {
	b := make([]byte, 0, 16*min(len(stored)+len(listed), maxMarkedIDs))
	for _, id := range stored {
		b = append(b, id[:]...)
	}
	for id := range listed {
		if len(b) >= 16*maxMarkedIDs {
			break
		}
		b = append(b, id[:]...)
	}
	return wire.AppendBytes(nil, markIDsField, b)
}

// prevCommitted reports whether the earlier attempt of this call that may
// have committed did: it stored a job with a fixed ID, and the marker lists
// every such job it stored. An attempt that stored nothing wrote nothing,
// and the call simply runs again.
func (c *zenqueueCall) prevCommitted(listed map[ID]bool) bool {
	if c.prev == nil || listed == nil {
		return false
	}
	stored := 0
	for _, r := range c.prev {
		if r.Duplicate {
			continue
		}
		if !listed[r.ID] {
			return false
		}
		stored++
	}
	return stored > 0
}

// zoneLanes returns a zone's lane count from its meta: Options.ZoneLanes
// when it has none, or when the meta does not decode (logged: new jobs
// then go by the default until SetZoneLanes rewrites it).
func (q *Queue) zoneLanes(f kv.Future[[]byte]) (int, error) {
	v, err := f.Get()
	if err != nil {
		return 0, err
	}
	return q.zoneLanesOf(v), nil
}

// zoneLanesOf is zoneLanes of a meta value read (nil: none).
func (q *Queue) zoneLanesOf(v []byte) int {
	if v == nil {
		return q.opts.ZoneLanes
	}
	var m zoneMeta
	if derr := m.unmarshal(v); derr != nil || m.Lanes == 0 {
		if derr != nil {
			q.opts.Logger.Warn("quick: a zone meta does not decode; placing jobs by Options.ZoneLanes", "err", derr)
		}
		return q.opts.ZoneLanes
	}
	return int(m.Lanes)
}

// zreads are the futures of an enqueue attempt's first round trip.
type zreads struct {
	markKey []byte
	// listed is what the marker says its transactions stored (nil: none
	// read).
	listed   map[ID]bool
	uniq     []kv.Future[[]byte]
	types    map[string]kv.Future[[]byte]
	sleepers map[string]kv.Future[[]byte]
	guessed  *coverer // lane states of the lanes placed by Options.ZoneLanes
	// marks are the hand-out marks Z (5, prio, lane) of the guessed lanes
	// of short-job task types, by lane state key (readHandoutMarks).
	marks map[string]kv.Future[[]byte]
}

// readHandoutMarks issues, beside the lane states, serializable reads of
// the hand-out marks of the lanes of short-job task types in c (none for
// other types: they have no marks), keyed by lane state key.
//
// The invariant they restore (issue 22, item 1): while a lane is held in
// short-job mode, every job key at or before its hand-out mark was handed
// out under the lease the mark names. A continuing claim reads only after
// its cursor, and a takeover counts a run for every untokened key up to the
// mark, so a key placed there would never run under the holder and would be
// counted as run when it died. An enqueue therefore places a job it would
// put behind the mark of the lane's live short lease just after it
// (afterHandout). The reads are serializable: a claim that leases the lane
// (the lane state) or hands out more (the mark) before the enqueue commits
// makes it retry and see the new mark; a lane not held by a short lease
// has no constraint, since its next holder starts from the lane's first key.
func (q *Queue) readHandoutMarks(tr kv.Transaction, c *coverer) map[string]kv.Future[[]byte] {
	var out map[string]kv.Future[[]byte]
	for _, it := range c.items {
		if !q.opts.TaskTypes[it.l.z.taskType].ShortJobs {
			continue
		}
		if out == nil {
			out = map[string]kv.Future[[]byte]{}
		}
		out[string(it.l.stateKey())] = tr.Get(it.l.handoutKey())
	}
	return out
}

// handoutFloor returns the key a job placed in a lane must sort after: the
// hand-out mark's, when the lane state (a value read) is a short-job lease
// and the mark (read) is that lease's. ok is false when there is none.
func handoutFloor(state []byte, mark kv.Future[[]byte]) (vestMs int64, id ID, ok bool, err error) {
	if mark == nil || state == nil {
		return 0, ID{}, false, nil
	}
	mv, err := mark.Get()
	if err != nil || mv == nil {
		return 0, ID{}, false, err
	}
	var s laneState
	if s.unmarshal(state) != nil || s.Token == 0 || !s.Short {
		return 0, ID{}, false, nil
	}
	tok, vestMs, id, ok := parseHandoutMark(mv)
	if !ok || tok != s.Token {
		return 0, ID{}, false, nil
	}
	return vestMs, id, true, nil
}

// afterHandout returns the vesting time at which a job with ID id, wanted
// at vestMs, sorts after the hand-out mark (markMs, markID): vestMs itself
// when its key already does, else markMs+1 (the mark's job has vested, so
// the job still vests at once).
func afterHandout(vestMs int64, id ID, markMs int64, markID ID) int64 {
	if mutant.On("quick.enqueue-after-mark") {
		return vestMs
	}
	if vestMs > markMs || vestMs == markMs && string(id[:]) > string(markID[:]) {
		return vestMs
	}
	return markMs + 1
}

// vestAfterHandout is the rule of readHandoutMarks for the placements
// other than Enqueue (run-now, requeue, and the acks that move a job's
// key: fail, snooze, release): the vesting time at which a job with ID id,
// wanted at vestMs in lane l, sorts after the hand-out mark of the lane's
// live short lease (afterHandout), or vestMs when there is none. Call it
// before writing the key.
//
// Keys: for short-job task types only, reads Z (1, prio, lane) and
// Z (5, prio, lane) (serializable, as readHandoutMarks says why).
func (q *Queue) vestAfterHandout(tr kv.Transaction, l laneRef, vestMs int64, id ID) (int64, error) {
	var c coverer
	c.add(l, vestMs)
	marks := q.readHandoutMarks(tr, &c)
	if marks == nil || mutant.On("quick.place-after-mark") {
		return vestMs, nil
	}
	c.read(tr)
	k := string(l.stateKey())
	sv, err := c.byKey[k].state.Get()
	if err != nil {
		return 0, err
	}
	markMs, markID, ok, err := handoutFloor(sv, marks[k])
	if err != nil || !ok {
		return vestMs, err
	}
	return afterHandout(vestMs, id, markMs, markID), nil
}

// zplace decides each job (new, duplicate of an ID or of a unique key)
// and writes the new ones, their cover, the marker, wake-ups and task
// types.
func (q *Queue) zplace(tr kv.Transaction, now time.Time, jobs []job, zones []zone, lanesOf map[string]int, call *zenqueueCall, r zreads) ([]Enqueued, error) {
	nowMs := now.UnixMilli()
	out := make([]Enqueued, len(jobs))
	seenID := map[ID]bool{}
	seenUniq := map[string]ID{}
	var cov coverer
	// The hand-out marks of short-job lanes that jobs are placed in
	// (readHandoutMarks): a lane not guessed right by the first round trip
	// (its zone was resized) is read now.
	var late coverer
	for i, j := range jobs {
		l := laneRef{z: zones[i], prio: j.Priority, lane: laneOfID(j.ID, lanesOf[string(zones[i].space.Bytes())])}
		if q.opts.TaskTypes[j.TaskType].ShortJobs && r.guessed.byKey[string(l.stateKey())] == nil {
			late.add(l, 0)
		}
	}
	late.read(tr)
	lateMarks := q.readHandoutMarks(tr, &late)
	type floor struct {
		ms int64
		id ID
	}
	floors := map[string]floor{}
	for _, m := range []struct {
		c     *coverer
		marks map[string]kv.Future[[]byte]
	}{{r.guessed, r.marks}, {&late, lateMarks}} {
		for k, mf := range m.marks {
			sv, err := m.c.byKey[k].state.Get()
			if err != nil {
				return nil, err
			}
			ms, id, ok, err := handoutFloor(sv, mf)
			if err != nil {
				return nil, err
			}
			if ok {
				floors[k] = floor{ms, id}
			}
		}
	}
	var stored []ID // the jobs given IDs that this transaction stores
	for i, j := range jobs {
		if seenID[j.ID] || call.given[i] && r.listed[j.ID] && !mutant.On("quick.marker-per-job") {
			out[i] = Enqueued{ID: j.ID, Duplicate: true}
			continue
		}
		if j.UniqueKey != "" {
			uk := j.TaskType + "\x00" + j.UniqueKey
			if first, ok := seenUniq[uk]; ok {
				out[i] = Enqueued{ID: first, Duplicate: true}
				continue
			}
			holder, err := q.zuniqueHolder(tr, r.uniq[i])
			if err != nil {
				return nil, err
			}
			if !holder.IsZero() {
				out[i] = Enqueued{ID: holder, Duplicate: true}
				continue
			}
			seenUniq[uk] = j.ID
		}
		seenID[j.ID] = true
		z := zones[i]
		l := laneRef{z: z, prio: j.Priority, lane: laneOfID(j.ID, lanesOf[string(z.space.Bytes())])}
		vestMs := j.runAt.UnixMilli()
		runAt := j.runAt
		if f, ok := floors[string(l.stateKey())]; ok {
			if after := afterHandout(vestMs, j.ID, f.ms, f.id); after != vestMs {
				vestMs, runAt = after, time.UnixMilli(after)
			}
		}
		call.wrote = append(call.wrote, q.zwrite(tr, nowMs, l, vestMs, j))
		cov.add(l, vestMs)
		out[i] = Enqueued{ID: j.ID, RunAt: runAt}
		if call.given[i] {
			stored = append(stored, j.ID)
		}
	}
	// The lane states read with the first round trip serve every lane
	// guessed right; the others are read now.
	for _, it := range cov.items {
		if g := r.guessed.byKey[string(it.l.stateKey())]; g != nil {
			it.state = g.state
		}
	}
	if err := q.applyCover(tr, &cov, nowMs); err != nil {
		return nil, err
	}
	if err := q.growBackloggedZones(tr, &cov, lanesOf, q.contendedZones(call, &cov, lanesOf)); err != nil {
		return nil, err
	}
	if len(stored) > 0 && r.markKey != nil {
		tr.Set(r.markKey, markValue(stored, r.listed))
	}
	woken, err := q.wakeSleepers(tr, now, jobs, out, r.sleepers)
	if err != nil {
		return nil, err
	}
	call.woken = woken
	// Register new task types for inspection; cache a type only once it is
	// seen stored, so an aborted transaction cannot leave it unregistered.
	if err := q.registerTypes(tr, r.types); err != nil {
		return nil, err
	}
	return out, nil
}

// zwrite writes one new job into lane l and returns its key.
func (q *Queue) zwrite(tr kv.Transaction, nowMs int64, l laneRef, vestMs int64, j job) []byte {
	v := zjobValue{
		MaxAttempts: int64(j.MaxAttempts),
		UniqueKey:   j.UniqueKey,
		Flags:       q.waitFlag(j.NewJob),
		RetainMs:    retainMsOf(j.Retain),
		Trace:       j.trace,
	}
	if q.tracked(j.TaskType) {
		v.Flags |= flagTrackable
	}
	if nowMs != j.ID.Time().UnixMilli() {
		v.CreatedAtMs = nowMs
	}
	if len(j.Payload) > InlinePayload {
		v.Flags |= flagBlob
		tr.Set(l.z.blobKey(j.ID), j.Payload)
	} else {
		v.Payload = j.Payload
	}
	key := l.jobKey(vestMs, j.ID)
	tr.Set(key, v.marshal())
	if j.UniqueKey != "" {
		tr.Set(q.k.uniqKey(j.TaskType, j.UniqueKey), j.ID[:])
	}
	q.indexSet(tr, l, vestMs, j.ID, v.Flags)
	return key
}

// zuniqueHolder returns the job holding a unique key for a zones enqueue,
// or the zero ID when the key is free. A live job has no record while it
// is pending or running and clears its unique key when it finishes, so a
// key whose holder has no record is held; a holder with a record is a
// dead letter, which frees the key.
func (q *Queue) zuniqueHolder(tr kv.Transaction, f kv.Future[[]byte]) (ID, error) {
	if f == nil {
		return ID{}, nil
	}
	v, err := f.Get()
	if err != nil || v == nil {
		return ID{}, err
	}
	if len(v) != len(ID{}) {
		return ID{}, fmt.Errorf("%w: unique key value of %d bytes", ErrCorrupt, len(v))
	}
	id := ID(v)
	rv, err := tr.Get(q.k.jobKey(id)).Get()
	if err != nil {
		return ID{}, err
	}
	if rv == nil {
		return id, nil
	}
	// Only a dead letter has a record; a dead holder frees the key.
	if _, err := decodeDeadRecord(id, rv); err != nil {
		return ID{}, err
	}
	return ID{}, nil
}

// zenqueueTxCall is EnqueueTx. The caller owns the
// retry loop, so only the jobs it gave IDs are recognised on its retries:
// the call's marker is named by the first of them.
func (q *Queue) zenqueueTxCall(tr kv.Transaction, now time.Time, in []NewJob, prepared []job) ([]Enqueued, error) {
	call := zenqueueCall{given: make([]bool, len(in))}
	n := 0
	for i, j := range in {
		call.given[i] = !j.ID.IsZero()
		if call.given[i] {
			n++
		}
	}
	if n > maxMarkedIDs {
		// The marker lists the IDs it recognises, within FDB's value limit.
		return nil, fmt.Errorf("quick: enqueue: %w: %d jobs given IDs in one EnqueueTx, over %d", ErrInvalidOption, n, maxMarkedIDs)
	}
	return q.zenqueueTx(tr, now, prepared, &call)
}

// EnqueueTx enqueues jobs inside the caller's transaction: they commit with
// the caller's own writes or not at all. The caller owns the retry loop, so
// give each job an ID made once outside it (NewJob.ID): a retry then returns
// the job the first attempt created, even if that attempt committed and the
// job has since run. Jobs without an ID get a fresh one per call.
//
// Keys: those of zenqueueTx: one job key per job in its zone (and its
// payload blob over InlinePayload), one marker S (2, "m", id) per call
// named by its first job given an ID and listing the IDs stored under it
// (at most 4096 jobs given IDs per call; a call returns the jobs its marker
// lists as duplicates), the lane states and pointers the jobs need
// (cover), S (1, "u", type, key) for unique jobs, and, until this process
// has seen a task type registered, S (1, "t", type).
func (q *Queue) EnqueueTx(tr kv.Transaction, jobs ...NewJob) ([]Enqueued, error) {
	now := q.Now()
	prepared := make([]job, len(jobs))
	for i, in := range jobs {
		j, err := q.prepare(now, in)
		if err != nil {
			return nil, fmt.Errorf("quick: enqueue job %d (%s): %w", i, in.TaskType, err)
		}
		prepared[i] = j
	}
	return q.zenqueueTxCall(tr, now, jobs, prepared)
}

// enqueueBatchBytes bounds one standalone enqueue transaction, far under
// FDB's 10 MB limit and its 1 MB advice.
const enqueueBatchBytes = 512 << 10

// Enqueue enqueues jobs of raw payloads (Insert takes typed arguments;
// the package doc says which to use when) in transactions of its own, as
// many per transaction as fit in about 512 KB. IDs are fixed before the retry loop, so a retry
// after commit_unknown_result never creates a second job. If a later batch
// fails, the earlier ones stay committed: the result lists them, and
// enqueueing the same NewJobs (same IDs) again is safe.
func (q *Queue) Enqueue(ctx context.Context, jobs ...NewJob) ([]Enqueued, error) {
	now := q.Now()
	prepared := make([]job, len(jobs))
	for i, in := range jobs {
		traceOf(ctx, &in)
		j, err := q.prepare(now, in)
		if err != nil {
			return nil, fmt.Errorf("quick: enqueue job %d (%s): %w", i, in.TaskType, err)
		}
		prepared[i] = j
	}
	return q.zenqueue(ctx, now, prepared)
}

func jobBytes(j job) int {
	return 200 + 2*len(j.TaskType) + len(j.Payload) + 2*len(j.UniqueKey) + len(j.ItemSpace)
}

// readSleepers reads the sleep key of each task type with a job that vests
// now, so the enqueue can tell whether a worker sleeps on the wake key. The
// read is serializable on purpose: a worker that registers its sleep between
// this enqueue's read and its commit makes the enqueue conflict and retry,
// now seeing the sleeper and waking it. With a snapshot read that enqueue
// would neither wake the worker nor be seen by the claim the worker made
// just before sleeping. Registrations are one per idle spell of a worker,
// so the retries this causes are rare.
func (q *Queue) readSleepers(tr kv.Transaction, now time.Time, jobs []job) map[string]kv.Future[[]byte] {
	if q.opts.DisableWakeOnEnqueue {
		return nil
	}
	var out map[string]kv.Future[[]byte]
	for _, j := range jobs {
		if j.runAt.After(now) || out[j.TaskType] != nil {
			continue
		}
		if out == nil {
			out = map[string]kv.Future[[]byte]{}
		}
		out[j.TaskType] = tr.Get(q.k.sleepKey(j.TaskType))
	}
	return out
}

// wakeSleepers adds 1 to the wake key of each task type that got a new job
// vesting now while a worker sleeps on it: one atomic add, and nothing at
// all when no worker sleeps. It returns the task types it woke.
func (q *Queue) wakeSleepers(tr kv.Transaction, now time.Time, jobs []job, out []Enqueued, sleepers map[string]kv.Future[[]byte]) ([]string, error) {
	woken := map[string]bool{}
	var bumped []string
	for i, j := range jobs {
		f := sleepers[j.TaskType]
		if f == nil || woken[j.TaskType] || out[i].Duplicate || j.runAt.After(now) {
			continue
		}
		v, err := f.Get()
		if err != nil {
			return nil, err
		}
		woken[j.TaskType] = true
		if len(v) == 8 && int64(binary.LittleEndian.Uint64(v)) > now.UnixMilli() {
			tr.Add(q.k.wakeKey(j.TaskType), le64(1))
			bumped = append(bumped, j.TaskType)
		}
	}
	return bumped, nil
}

// registerTypes registers the task types whose registration reads are in
// types; a type is cached only once it is seen
// stored, so an aborted transaction cannot leave it unregistered.
func (q *Queue) registerTypes(tr kv.Transaction, types map[string]kv.Future[[]byte]) error {
	for t, f := range types {
		v, err := f.Get()
		if err != nil {
			return err
		}
		if v != nil {
			q.knownTypes.Store(t, true)
		} else {
			tr.Set(q.k.typeKey(t), nil)
		}
	}
	return nil
}
