package quick

import (
	"context"
	"fmt"
	"slices"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Listing a task type's live jobs across its zones. No index lists the
// tenants (one would cost a write per new zone, and ZoneSpace may put zones
// anywhere): every lane that holds jobs has an entry in the pointer index
// S (2, "p", type, ...) (zone.go's invariant), whose value names its zone, so
// the pointer index is the list of lanes to read. Each call reads at most
// ScanBudget keys, whatever the backlog or the number of tenants, and
// returns a cursor to go on.

// Cursor kinds of List (cursor.go has the others).
const (
	cursorListIndex byte = 'L' // every tenant: a place in the pointer index and in its lane
	cursorListZones byte = 'T' // named tenants: a tenant and a place in its zone
)

// Budgets of List, in keys read per call.
const (
	defaultListBudget = 5000
	minListBudget     = 16
	maxListBudget     = 50_000
	// listChunk bounds one range read of job keys when a State filter may
	// skip many of them.
	listChunk = 500
	// listPointerBatch bounds one range read of the pointer index.
	listPointerBatch = 64
)

// Cursor modes of an index listing: where in the pointer entry P to go on.
const (
	listAfterPointer byte = 'a' // after P and its lane
	listInLane       byte = 'i' // in P's lane, after a job key
	listAtPointer    byte = 's' // at P's lane, from its start
)

// ListOptions select jobs to list.
type ListOptions struct {
	// TaskType is required.
	TaskType string
	// ItemSpaces keeps only the jobs of these tenants; nil lists every
	// tenant (through the pointer index); []string{""} is the zone of the
	// jobs enqueued without an ItemSpace.
	ItemSpaces []string
	// State filters by state (scheduled, ready or leased); zero lists all.
	State State
	// Limit is the most jobs returned; default 100, at most 1,000.
	Limit int
	// After resumes a listing: pass the previous page's Next (with the same
	// TaskType and ItemSpaces).
	After Cursor
	// ScanBudget is the most keys one call reads (pointer entries, lane
	// states, job keys, and one per named tenant's zone); default 5,000,
	// at least 16, at most 50,000. A call that spends it returns the jobs
	// found so far (maybe none) and a Next to go on.
	ScanBudget int
}

// JobPage is a page of a listing.
type JobPage struct {
	Jobs []JobInfo
	// Next resumes the listing; empty at the end. A page may hold fewer
	// than Limit jobs (even none) and still have a Next, when the call
	// spent its ScanBudget.
	Next Cursor
}

// List lists a task type's scheduled, ready and leased jobs, without their
// payloads.
//
// With ItemSpaces nil it walks the pointer index in its order (priority,
// then when each lane next has work) and reads each lane's job keys in
// vesting order; a pointer entry whose lane state names another entry is a
// leftover and is skipped. Pages are not one snapshot: a lane whose pointer
// moves between two calls (a worker takes it, hands it back) may be listed
// again later or skipped, but within one page each job appears once. With
// ItemSpaces set it reads those tenants' zones in tenant order, each in
// key order (priority, lane, vesting time), which does not move.
//
// The state comes from the job key alone: ready once its vesting time has
// passed, leased while it carries a lease token and vests in the future,
// scheduled otherwise.
//
// Keys: snapshot reads only. Every tenant: range reads of S (2, "p", type)
// (at most 64 entries each) with a point read of each entry's lane state
// Z (1, prio, lane), then range reads of each lane's job keys Z (0, prio,
// lane) (at most 500 keys each). Named tenants: range reads of each zone's
// Z (0). In all at most ScanBudget keys per call.
func (q *Queue) List(ctx context.Context, opts ListOptions) (JobPage, error) {
	page, _, err := q.list(ctx, opts)
	return page, err
}

// list is List, also returning how many keys it read.
func (q *Queue) list(ctx context.Context, opts ListOptions) (JobPage, int, error) {
	if err := validTaskType(opts.TaskType); err != nil {
		return JobPage{}, 0, err
	}
	switch opts.State {
	case 0, StateScheduled, StateReady, StateLeased:
	default:
		return JobPage{}, 0, fmt.Errorf("%w: List shows scheduled, ready and leased jobs, not %s; use ListDead for dead letters", ErrInvalidOption, opts.State)
	}
	budget := opts.ScanBudget
	if budget <= 0 {
		budget = defaultListBudget
	}
	budget = min(max(budget, minListBudget), maxListBudget)
	var spaces []string
	if opts.ItemSpaces != nil {
		spaces = slices.Clone(opts.ItemSpaces)
		slices.Sort(spaces)
		spaces = slices.Compact(spaces)
	}
	kind, nparts := cursorListIndex, 3
	if spaces != nil {
		kind, nparts = cursorListZones, 2
	}
	cur, err := opts.After.parts(kind, opts.TaskType, nparts)
	if err != nil {
		return JobPage{}, 0, err
	}
	if kind == cursorListIndex && cur != nil {
		if m := cur[2]; len(m) != 1 || (m[0] != listAfterPointer && m[0] != listInLane && m[0] != listAtPointer) {
			return JobPage{}, 0, fmt.Errorf("%w: unknown position", ErrInvalidCursor)
		}
	}
	var (
		page JobPage
		used int
	)
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		s := &listScan{snap: tr.Snapshot(), state: opts.State, limit: inspectLimit(opts.Limit, 100), budget: budget, nowMs: q.Now().UnixMilli()}
		var next Cursor
		var err error
		if spaces != nil {
			next, err = q.listZones(s, opts.TaskType, spaces, cur)
		} else {
			next, err = q.listIndex(s, opts.TaskType, cur)
		}
		page, used = JobPage{Jobs: s.jobs, Next: next}, s.used
		return err
	})
	if err != nil {
		return JobPage{}, 0, fmt.Errorf("quick: list %s: %w", opts.TaskType, err)
	}
	return page, used, nil
}

// listScan is one List call's budget and page.
type listScan struct {
	snap          kv.ReadTransaction
	state         State
	limit, budget int
	used          int
	nowMs         int64
	jobs          []JobInfo
}

func (s *listScan) full() bool { return len(s.jobs) >= s.limit || s.used >= s.budget }

// scan reads job keys of zone z in r, in chunks, keeping those of the
// wanted state, until r ends (done), the page is full or the budget spent.
// last is the last key read (nil if none).
func (s *listScan) scan(z zone, r kv.KeyRange) (last []byte, done bool, err error) {
	for !s.full() {
		chunk := min(s.budget-s.used, listChunk)
		if s.state == 0 {
			chunk = min(chunk, s.limit-len(s.jobs))
		}
		kvs, err := s.snap.GetRange(r, kv.RangeOptions{Limit: chunk}).GetSliceWithError()
		if err != nil {
			return nil, false, err
		}
		s.used += len(kvs)
		for _, p := range kvs {
			last = p.Key
			jk, perr := z.parseJobKey(p.Key)
			var v zjobValue
			if perr != nil || v.unmarshal(p.Value) != nil {
				continue // a claim that meets it quarantines it
			}
			l := laneRef{z: z, prio: jk.Priority, lane: jk.Lane}
			info := zinfo(l, jk, &v, nil, s.nowMs)
			if s.state != 0 && info.State != s.state {
				continue
			}
			// Where the key is, for CancelMatching (also a job of an
			// Untracked type).
			info.zl = &zoneRef{lane: l, vestMs: jk.VestMs, v: v}
			s.jobs = append(s.jobs, info)
			if len(s.jobs) >= s.limit {
				// The rest of the chunk (State filter) is read again by
				// the next call: the cursor is this key.
				return last, false, nil
			}
		}
		if len(kvs) < chunk {
			return last, true, nil
		}
		r.Begin = kv.KeyAfter(last)
	}
	return last, false, nil
}

// listZones lists the zones of the named tenants (sorted), from the cursor
// [tenant, job key tail].
func (q *Queue) listZones(s *listScan, taskType string, spaces []string, cur [][]byte) (Cursor, error) {
	start := 0
	var after []byte
	if cur != nil {
		name := string(cur[0])
		start, _ = slices.BinarySearch(spaces, name)
		if start < len(spaces) && spaces[start] == name && len(cur[1]) > 0 {
			after = cur[1]
		}
	}
	for i := start; i < len(spaces); i++ {
		z := q.zoneOf(taskType, spaces[i])
		prefix := z.space.Sub(int64(zJobs)).Bytes()
		if s.full() {
			return makePartsCursor(cursorListZones, taskType, []byte(spaces[i]), nil), nil
		}
		r := z.jobs()
		if i == start && after != nil {
			r.Begin = kv.KeyAfter(append(slices.Clip(prefix), after...))
		}
		s.used++ // an empty zone still costs a read
		last, done, err := s.scan(z, r)
		if err != nil {
			return "", err
		}
		if !done {
			var tail []byte
			if last != nil {
				tail = last[len(prefix):]
			} else if i == start {
				tail = after
			}
			return makePartsCursor(cursorListZones, taskType, []byte(spaces[i]), tail), nil
		}
	}
	return "", nil
}

// listIndex lists every tenant's jobs through the pointer index, from the
// cursor [pointer key tail, job key tail, mode].
func (q *Queue) listIndex(s *listScan, taskType string, cur [][]byte) (Cursor, error) {
	space := q.zk.ptr.Sub(taskType)
	prefix := space.Bytes()
	abs := func(tail []byte) []byte { return append(slices.Clip(prefix), tail...) }
	cursor := func(ptr []byte, mode byte, jobTail []byte) Cursor {
		return makePartsCursor(cursorListIndex, taskType, ptr[len(prefix):], jobTail, []byte{mode})
	}
	r := rangeOf(space)
	var lastPtr []byte
	if cur != nil {
		ptr := abs(cur[0])
		if string(ptr) >= string(r.End) {
			return "", nil
		}
		r.Begin, lastPtr = kv.KeyAfter(ptr), ptr
		if mode := cur[2][0]; mode != listAfterPointer {
			// Go on in P's lane if P is still where it was.
			pv, err := s.snap.Get(ptr).Get()
			if err != nil {
				return "", err
			}
			s.used++
			if pv != nil {
				e, perr := q.zk.parsePointer(kv.KeyValue{Key: ptr, Value: pv})
				if perr == nil {
					ok, err := s.live(e)
					if err != nil {
						return "", err
					}
					if ok {
						l := e.lane()
						lr := l.laneRange()
						lanePrefix := l.jobsPrefix()
						after := cur[1]
						if mode == listInLane {
							lr.Begin = kv.KeyAfter(append(slices.Clip(lanePrefix), after...))
						} else {
							after = nil
						}
						last, done, err := s.scan(l.z, lr)
						if err != nil {
							return "", err
						}
						if !done {
							if last == nil {
								if after == nil {
									return cursor(ptr, listAtPointer, nil), nil
								}
								return cursor(ptr, listInLane, after), nil
							}
							return cursor(ptr, listInLane, last[len(lanePrefix):]), nil
						}
					}
				}
			}
		}
	}
	for {
		if s.full() {
			if lastPtr == nil {
				return "", fmt.Errorf("%w: list budget spent before any read", ErrInvalidOption)
			}
			return cursor(lastPtr, listAfterPointer, nil), nil
		}
		batch := min((s.budget-s.used)/2, listPointerBatch)
		if batch == 0 {
			if lastPtr == nil {
				batch = 1
			} else {
				return cursor(lastPtr, listAfterPointer, nil), nil
			}
		}
		kvs, err := s.snap.GetRange(r, kv.RangeOptions{Limit: batch}).GetSliceWithError()
		if err != nil {
			return "", err
		}
		s.used += len(kvs)
		type entry struct {
			key   []byte
			e     pointerEntry
			ok    bool
			state kv.Future[[]byte]
		}
		entries := make([]entry, len(kvs))
		for i, p := range kvs {
			entries[i].key = p.Key
			if e, perr := q.zk.parsePointer(p); perr == nil {
				entries[i].e, entries[i].ok = e, true
				entries[i].state = s.snap.Get(e.lane().stateKey())
			}
		}
		for _, en := range entries {
			if !en.ok {
				lastPtr = en.key // a claim that meets it quarantines it
				continue
			}
			if s.full() {
				return cursor(en.key, listAtPointer, nil), nil
			}
			v, err := en.state.Get()
			if err != nil {
				return "", err
			}
			s.used++
			if !liveEntry(en.e, v) {
				lastPtr = en.key
				continue
			}
			l := en.e.lane()
			lanePrefix := l.jobsPrefix()
			last, done, err := s.scan(l.z, l.laneRange())
			if err != nil {
				return "", err
			}
			if !done {
				if last == nil {
					return cursor(en.key, listAtPointer, nil), nil
				}
				return cursor(en.key, listInLane, last[len(lanePrefix):]), nil
			}
			lastPtr = en.key
		}
		if len(kvs) < batch {
			return "", nil
		}
		r.Begin = kv.KeyAfter(kvs[len(kvs)-1].Key)
	}
}

// live reads a pointer entry's lane state and reports whether it names the
// entry (else the entry is a leftover: its lane is listed through the entry
// the state names).
func (s *listScan) live(e pointerEntry) (bool, error) {
	v, err := s.snap.Get(e.lane().stateKey()).Get()
	if err != nil {
		return false, err
	}
	s.used++
	return liveEntry(e, v), nil
}

func liveEntry(e pointerEntry, state []byte) bool {
	var st laneState
	return state != nil && st.unmarshal(state) == nil && st.PtrMs == e.PtrMs
}

// jobsPrefix is the key prefix of one lane's job keys.
func (l laneRef) jobsPrefix() []byte {
	return l.z.space.Pack(tuple.Tuple{int64(zJobs), int64(l.prio), int64(l.lane)})
}
