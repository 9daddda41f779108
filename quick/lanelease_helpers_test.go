package quick

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Test helpers of the zones-lease branch. Claims are built on another
// branch (Claim); these place and claim zones jobs by hand, exactly as
// docs/design.md "Two levels" says a claim does, so the lease operations
// can be tested on their own.

// tb is what the helpers need of a test: *testing.T and *rapid.T both.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var zepoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// zenv is a zones queue (q, over counters and optionally faults) beside a
// queue over the same data without either (truth), for setting up and
// reading the state.
type zenv struct {
	q, truth *Queue
	db       *kv.CountedDB
	faulty   *kv.FaultyDB
	clk      *clock.Fake
	ctx      context.Context
	raw      kv.Database
	space    tuple.Subspace
}

func newZEnv(t testing.TB, opts Options, faults *kv.Faults) *zenv {
	t.Helper()
	raw, space := fdbtest.Open(t)
	clk := clock.NewFake(zepoch)
	opts.Clock = clk
	// zones is the only layout
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
	}
	ctx := context.Background()
	e := &zenv{clk: clk, ctx: ctx, raw: raw, space: space}
	var inner kv.Database = raw
	if faults != nil {
		e.faulty = kv.WithFaults(raw, *faults)
		e.faulty.SetEnabled(false)
		inner = e.faulty
	}
	e.db = kv.WithCounters(inner)
	var err error
	if e.truth, err = Open(ctx, raw, space, opts); err != nil {
		t.Fatal(err)
	}
	if e.q, err = Open(ctx, e.db, space, opts); err != nil {
		t.Fatal(err)
	}
	if e.faulty != nil {
		e.faulty.SetEnabled(true)
	}
	return e
}

// zjob is a job placed by hand.
type zjob struct {
	TaskType, ItemSpace string
	Priority            Priority
	Delay               time.Duration
	Payload             []byte
	MaxAttempts         int64
	UniqueKey           string
	Flags               uint64 // flagWaitable, flagTrackable
	Checkpoint          []byte
}

// zput places jobs as an enqueue does: the job key (payload inline up to
// InlinePayload bytes, else under Z (3, id)), and cover for its lane.
func (e *zenv) zput(t tb, jobs ...zjob) []ID {
	t.Helper()
	now := e.clk.Now()
	ids := make([]ID, len(jobs))
	for i := range jobs {
		ids[i] = NewID(now)
	}
	q := e.truth
	for start := 0; start < len(jobs); start += 500 {
		end := min(start+500, len(jobs))
		err := q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
			var c coverer
			for i := start; i < end; i++ {
				j := jobs[i]
				if j.TaskType == "" {
					j.TaskType = "email"
				}
				if j.Priority == 0 {
					j.Priority = Normal
				}
				if j.MaxAttempts == 0 {
					j.MaxAttempts = 3
				}
				z := q.zoneOf(j.TaskType, j.ItemSpace)
				l := laneRef{z: z, prio: j.Priority, lane: laneOfID(ids[i], q.opts.ZoneLanes)}
				vestMs := now.Add(j.Delay).UnixMilli()
				v := zjobValue{MaxAttempts: j.MaxAttempts, UniqueKey: j.UniqueKey, Flags: j.Flags}
				if len(j.Payload) > InlinePayload {
					tr.Set(z.blobKey(ids[i]), j.Payload)
					v.Flags |= flagBlob
				} else {
					v.Payload = j.Payload
				}
				if j.Checkpoint != nil {
					v.Flags |= flagCheckpoint
					if len(j.Checkpoint) > InlinePayload {
						tr.Set(z.ckptKey(ids[i]), j.Checkpoint)
						v.Flags |= flagCkptBlob
					} else {
						v.Checkpoint = j.Checkpoint
					}
				}
				if j.UniqueKey != "" {
					tr.Set(q.k.uniqKey(j.TaskType, j.UniqueKey), ids[i][:])
				}
				tr.Set(l.jobKey(vestMs, ids[i]), v.marshal())
				q.indexSet(tr, l, vestMs, ids[i], v.Flags)
				c.add(l, vestMs)
			}
			return q.applyCover(tr, &c, now.UnixMilli())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// lane0 is lane 0 of a zone at Normal priority.
func (e *zenv) lane0(taskType, itemSpace string) laneRef {
	return laneRef{z: e.truth.zoneOf(taskType, itemSpace), prio: Normal, lane: 0}
}

// zclaimTx takes up to max vested jobs of lane l with per-job leases, as a
// claim does: clear + set of the job key at now+lease with a fresh token,
// Attempt+1, Holder and LeasedAtMs, and a read-conflict key on each.
func zclaimTx(tr kv.Transaction, l laneRef, holder string, lease time.Duration, n int, now time.Time) ([]Lease, error) {
	nowMs := now.UnixMilli()
	r := l.laneRange()
	r.End = l.z.space.Pack(tuple.Tuple{int64(zJobs), int64(l.prio), int64(l.lane), nowMs + 1})
	kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: n}).GetSliceWithError()
	if err != nil {
		return nil, err
	}
	var out []Lease
	deadline := now.Add(lease).UnixMilli()
	for _, kvp := range kvs {
		jk, err := l.z.parseJobKey(kvp.Key)
		if err != nil {
			return nil, err
		}
		var v zjobValue
		if err := v.unmarshal(kvp.Value); err != nil {
			return nil, err
		}
		v.Payload = bytes.Clone(v.Payload)
		v.Checkpoint = bytes.Clone(v.Checkpoint)
		payload, ck := v.Payload, v.Checkpoint
		if v.Flags&flagBlob != 0 {
			if payload, err = tr.Snapshot().Get(l.z.blobKey(jk.ID)).Get(); err != nil {
				return nil, err
			}
		}
		if v.Flags&flagCkptBlob != 0 {
			if ck, err = tr.Snapshot().Get(l.z.ckptKey(jk.ID)).Get(); err != nil {
				return nil, err
			}
		}
		if err := tr.AddReadConflictKey(kvp.Key); err != nil {
			return nil, err
		}
		v.Attempt++
		v.Token = newToken()
		v.Holder = holder
		v.LeasedAtMs = nowMs
		tr.Clear(kvp.Key)
		tr.Set(l.jobKey(deadline, jk.ID), v.marshal())
		out = append(out, Lease{
			ID: jk.ID, TaskType: l.z.taskType, Priority: l.prio, ItemSpace: l.z.itemSpace,
			Payload: payload, Checkpoint: ck, Attempt: int(v.Attempt), MaxAttempts: int(v.MaxAttempts),
			VestedAt: time.UnixMilli(jk.VestMs), Deadline: time.UnixMilli(deadline), Holder: holder, LastError: v.LastError,
			zl: &zoneLease{lane: l, vestMs: deadline, v: v},
		})
	}
	return out, nil
}

// zclaim claims up to max vested jobs of lane 0 of a zone by hand (the
// lane's pointer is left alone: moving keys later needs no cover).
func (e *zenv) zclaim(t tb, l laneRef, holder string, lease time.Duration, n int) []Lease {
	t.Helper()
	var out []Lease
	err := e.truth.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		var err error
		out, err = zclaimTx(tr, l, holder, lease, n, e.clk.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// zshortClaim is what Claim does in short-job mode: acquire a lane
// (p nil) or check the one held, and hand out its vested jobs. found is
// false when no lane was vested.
func zshortClaim(ctx context.Context, q *Queue, taskType, holder string, p *LaneLease, max int) (Claimed, bool, error) {
	var res Claimed
	found := false
	now := q.Now()
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		res, found = Claimed{}, false
		var held LaneLease
		if p == nil {
			var err error
			held, found, _, err = q.acquire(tr, taskType, holder, 0, q.opts.LaneLeaseTime, true, now)
			if err != nil || !found {
				return err
			}
		} else {
			held = *p
			if _, err := q.checkHold(tr, &held); err != nil {
				return err
			}
			found = true
		}
		if err := q.takeShort(tr, ClaimOptions{TaskType: taskType, Holder: holder, Max: max}, &held, now, &res, nil); err != nil {
			return err
		}
		if res.Lane != nil {
			q.saveHold(tr, res.Lane)
		}
		return nil
	})
	return res, found, err
}

// zacquireClaim is a per-job-lease claim of the zones layout: it acquires
// a lane (as a worker that finds a lapsed short lane does), takes its
// vested jobs with per-job leases and hands the lane back.
func (e *zenv) zacquireClaim(t tb, q *Queue, taskType, holder string, lease time.Duration, n int) (LaneLease, []Lease) {
	t.Helper()
	var p LaneLease
	var out []Lease
	now := q.Now()
	err := q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		var found bool
		var err error
		p, found, _, err = q.acquire(tr, taskType, holder, 0, q.opts.LaneLeaseTime, false, now)
		if err != nil || !found {
			out = nil
			return err
		}
		if p.Lapsed && p.lapsedShort != 0 {
			// As Claim does: count a lapsed short holder's runs.
			if err := q.countLapsedShort(tr, &p); err != nil {
				return err
			}
		}
		if out, err = zclaimTx(tr, p.lane, holder, lease, n, now); err != nil {
			return err
		}
		key, vestMs, err := q.laneFirst(tr, p.lane, now.UnixMilli())
		if err != nil {
			return err
		}
		if key == nil {
			return q.releaseLane(tr, &p, -1, nil)
		}
		return q.releaseLane(tr, &p, max(vestMs, now.UnixMilli()), key)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, out
}

// laneKeys returns the job keys of a lane, parsed, with their values.
func (e *zenv) laneKeys(t tb, l laneRef) ([]zjobKey, []zjobValue) {
	t.Helper()
	return readLaneKeys(t, e.ctx, e.raw, l)
}

// readLaneKeys reads a lane's job keys and values from db, in order.
func readLaneKeys(t tb, ctx context.Context, db kv.Database, l laneRef) ([]zjobKey, []zjobValue) {
	t.Helper()
	var jks []zjobKey
	var vs []zjobValue
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		jks, vs = nil, nil
		kvs, err := tr.GetRange(l.laneRange(), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, kvp := range kvs {
			jk, err := l.z.parseJobKey(kvp.Key)
			if err != nil {
				return err
			}
			var v zjobValue
			if err := v.unmarshal(kvp.Value); err != nil {
				return err
			}
			jks, vs = append(jks, jk), append(vs, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return jks, vs
}

// get reads one key of the raw database.
func (e *zenv) get(t tb, key []byte) []byte {
	t.Helper()
	var v []byte
	err := e.raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(key).Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// laneState reads a lane's state and whether its pointer is where the
// state says (ok false: no state).
func (e *zenv) laneState(t tb, l laneRef) (laneState, bool) {
	t.Helper()
	v := e.get(t, l.stateKey())
	if v == nil {
		return laneState{}, false
	}
	var s laneState
	if err := s.unmarshal(v); err != nil {
		t.Fatal(err)
	}
	if e.get(t, e.truth.pointerKeyOf(l, s.PtrMs)) == nil {
		t.Fatalf("lane %s: no pointer at its state's %d", l, s.PtrMs)
	}
	return s, true
}

// pointers counts the pointer entries of a task type.
func (e *zenv) pointers(t tb, taskType string) int {
	t.Helper()
	n := 0
	err := e.raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		n = 0
		for _, p := range priorities {
			kvs, err := tr.GetRange(e.truth.zk.pointersUntil(taskType, p, -1), kv.RangeOptions{}).GetSliceWithError()
			if err != nil {
				return err
			}
			n += len(kvs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
