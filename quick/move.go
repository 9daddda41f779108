package quick

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Moving a tenant with its jobs, while workers run (docs/design.md,
// "Moving, adopting and deleting a tenant").

// MoveOptions configure MoveTenant.
type MoveOptions struct {
	// TaskType limits the move to one task type; empty moves the tenant's
	// zones of every task type the source knows (TaskTypes).
	TaskType string
	// Batch is how many jobs one copy transaction carries; default 256, at
	// most 1000 (and at most 2 MB of keys, values and blobs).
	Batch int
	// Fence is how long the fence's lane leases last, renewed while the
	// move runs; default 10 minutes. A move that crashes and is never
	// resumed leaves the source's jobs claimable again after it.
	Fence time.Duration
	// Progress, when set, is called after each step and batch.
	Progress func(TenantProgress)

	// afterStep, set by tests, runs after each step and batch commits
	// (step names as in the move record, "batch" after a batch): an error
	// stops the move there, as a crash would.
	afterStep func(taskType, step string) error
}

// errStop is what afterStep returns to stop a move in tests.
var errStop = errors.New("quick: stopped by the test")

// MoveTenant moves a tenant's zones of one task type (or of every known
// task type) with their jobs from this queue to the queue to, while workers
// run on both. The destination is where to places the tenant's zones
// (to's Options.ZoneSpace, or its own subspace):
//
//   - to another subspace of the same database: open a second handle on
//     the same database and queue subspace whose Options.ZoneSpace names
//     the new place, move, then give every process that ZoneSpace;
//   - to another queue, in this database or another FoundationDB cluster
//     (another kv.Database): open the destination queue on it, move, and
//     route the tenant's enqueues and workers there.
//
// Route the tenant's new enqueues to the destination before the move ends:
// what lands in the source while the move runs is moved with the rest, but
// a job enqueued there after the move is a new zone at the source.
//
// The steps: fence (the source's lanes are leased by the move, so no claim
// takes its jobs and its short-job leases' acks fail; the destination
// zone's lanes likewise, so nothing there runs a copy before the move is
// done), copy (Batch jobs per transaction: revoke their leases at the
// source, write them at the destination with their lookup index entries and
// unique keys, clear them at the source), adopt (hand the destination's
// lanes back: their pointers go to each lane's earliest job; the tenant's
// limits override is copied), delete (the source's lanes, pointers, meta,
// limits state), and the move record is cleared. A job leased at the fence
// runs at most once more, at the destination, once its old lease's
// deadline passes; no job is lost, and no job other than those runs twice.
// No step writes the two databases in one transaction: the destination is
// written first, idempotently, then the source cleared, so a crash at any
// point re-copies at most a batch.
//
// It is resumable: the record S (1, "mv", itemSpace, type) at the source
// says where the move is, and calling MoveTenant again with the same
// destination carries on (ErrTenantBusy when another operation holds it).
func (q *Queue) MoveTenant(ctx context.Context, itemSpace string, to *Queue, opts MoveOptions) (TenantResult, error) {
	var res TenantResult
	if to == nil {
		return res, fmt.Errorf("quick: move tenant %q: %w: no destination queue", itemSpace, ErrInvalidOption)
	}
	opts.Batch = batchOf(opts.Batch)
	if opts.Fence <= 0 {
		opts.Fence = defaultFence
	}
	if opts.Fence < MinLease {
		return res, fmt.Errorf("quick: move tenant %q: %w: fence %v under %v", itemSpace, ErrInvalidOption, opts.Fence, MinLease)
	}
	return q.eachTenantType(ctx, itemSpace, opts.TaskType, "move", func(tt string) (int64, bool, error) {
		return q.moveOne(ctx, itemSpace, tt, to, opts)
	})
}

// sameDatabase reports whether q and to reach one database: the same
// handle, or (two handles may open one cluster) the move record rec, just
// written through q, read back through to at the same key.
//
// Keys: reads S (1, "mv", itemSpace, type) through to's database.
func (q *Queue) sameDatabase(ctx context.Context, to *Queue, itemSpace, taskType string, rec *moveRecord) (bool, error) {
	if sameDB(q.db, to.db) {
		return true, nil
	}
	key := q.k.moveKey(itemSpace, taskType)
	var v []byte
	err := to.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(key).Get()
		return err
	})
	if err != nil || v == nil {
		return false, err
	}
	var seen moveRecord
	return seen.unmarshal(v) == nil && seen.Token == rec.Token, nil
}

// sameDB reports whether a and b are one handle (an engine whose handle
// type cannot be compared is taken as two).
func sameDB(a, b kv.Database) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

func (q *Queue) moveOne(ctx context.Context, itemSpace, taskType string, to *Queue, opts MoveOptions) (int64, bool, error) {
	src, dst := q.zoneOf(taskType, itemSpace), to.zoneOf(taskType, itemSpace)
	rec, err := q.loadOp(ctx, itemSpace, taskType)
	if err != nil {
		return 0, false, err
	}
	resumed := rec != nil
	switch {
	case rec == nil:
		rec = &moveRecord{Kind: opMove, Step: stepFence, Token: newToken(), Dest: dst.space.Bytes(), StartedMs: q.Now().UnixMilli()}
		if err := q.saveOp(ctx, itemSpace, taskType, rec); err != nil {
			return 0, false, err
		}
	case rec.Kind != opMove:
		return 0, false, fmt.Errorf("%w: a %s at step %s", ErrTenantBusy, rec.Kind, rec.Step)
	case !bytes.Equal(rec.Dest, dst.space.Bytes()):
		return 0, false, fmt.Errorf("%w: a move to another destination (zone %x) at step %s", ErrTenantBusy, rec.Dest, rec.Step)
	}
	oneDB, err := q.sameDatabase(ctx, to, itemSpace, taskType, rec)
	if err != nil {
		return 0, resumed, err
	}
	if oneDB && (bytes.HasPrefix(src.space.Bytes(), dst.space.Bytes()) || bytes.HasPrefix(dst.space.Bytes(), src.space.Bytes())) {
		if err := q.clearOp(ctx, itemSpace, taskType); err != nil {
			return 0, resumed, err
		}
		return 0, false, fmt.Errorf("%w: the destination zone %x and the source zone %x are one or overlap", ErrInvalidOption, dst.space.Bytes(), src.space.Bytes())
	}
	// One database and one queue subspace: one pointer index, lookup
	// index and unique keys, which the copy points at the destination.
	same := oneDB && bytes.Equal(q.space.Bytes(), to.space.Bytes())
	m := &mover{q: q, to: to, src: src, dst: dst, same: same, rec: rec, opts: opts}
	return rec.Done, resumed, m.run(ctx)
}

// mover carries one (tenant, task type) move through its steps.
type mover struct {
	q, to    *Queue
	src, dst zone
	same     bool
	rec      *moveRecord
	opts     MoveOptions
}

func (m *mover) after(step string) error {
	if m.opts.Progress != nil {
		m.opts.Progress(TenantProgress{TaskType: m.src.taskType, Step: step, Done: m.rec.Done})
	}
	if m.opts.afterStep != nil {
		return m.opts.afterStep(m.src.taskType, step)
	}
	return nil
}

// save writes the move record with its step.
func (m *mover) save(ctx context.Context, step string) error {
	m.rec.Step = step
	return m.q.saveOp(ctx, m.src.itemSpace, m.src.taskType, m.rec)
}

// fence (re)sets the fence on both zones, with a fresh deadline. The
// record is written first, so that a crash in between leaves a record that
// knows the token of every lease the move holds.
func (m *mover) fence(ctx context.Context, step string, dest bool) error {
	m.rec.FenceUntilMs = m.q.fenceDeadline(m.opts.Fence)
	if err := m.save(ctx, step); err != nil {
		return err
	}
	n, tops, err := m.q.zoneLaneTops(ctx, m.src)
	if err != nil {
		return err
	}
	for _, top := range tops {
		n = max(n, top)
	}
	if err := m.q.fenceZone(ctx, m.src, m.rec.Token, m.rec.FenceUntilMs, 0, "quick.move-fence"); err != nil || !dest {
		return err
	}
	// The destination's lanes include every lane number the source uses
	// (its count, and any lane above it with a state): a copied job keeps
	// its lane.
	return m.to.fenceZone(ctx, m.dst, m.rec.Token, m.rec.FenceUntilMs, n, "quick.move-fence-dest")
}

func (m *mover) run(ctx context.Context) error {
	// Every resume fences again, with a fresh deadline: the fence may have
	// lapsed while the move was down (claims then took the source's lanes
	// over; the copy revokes what they leased).
	// The destination stays fenced until the move adopts it, and is
	// fenced again only before that.
	step := m.rec.Step
	if step == stepFence {
		step = stepCopy
	}
	if err := m.fence(ctx, step, step == stepCopy || step == stepAdopt); err != nil {
		return err
	}
	if err := m.after(stepFence); err != nil {
		return err
	}
	for {
		switch m.rec.Step {
		case stepCopy:
			if err := m.copyAll(ctx); err != nil {
				return err
			}
			if err := m.save(ctx, stepAdopt); err != nil {
				return err
			}
			if err := m.after(stepCopy); err != nil {
				return err
			}
		case stepAdopt:
			if err := m.adopt(ctx); err != nil {
				return err
			}
			if err := m.save(ctx, stepDelete); err != nil {
				return err
			}
			if err := m.after(stepAdopt); err != nil {
				return err
			}
		case stepDelete:
			empty, err := m.q.clearZone(ctx, m.src, !m.same)
			if err != nil {
				return err
			}
			if !empty {
				// Jobs landed in the source after the copy (an enqueue
				// not yet routed to the destination): fence again and
				// carry on copying.
				if err := m.fence(ctx, stepCopy, true); err != nil {
					return err
				}
				continue
			}
			if err := m.after(stepDelete); err != nil {
				return err
			}
			return m.q.clearOp(ctx, m.src.itemSpace, m.src.taskType)
		default:
			return fmt.Errorf("%w: move record at unknown step %q", ErrCorrupt, m.rec.Step)
		}
	}
}

// copyAll copies the source's jobs batch by batch until it holds none.
func (m *mover) copyAll(ctx context.Context) error {
	for {
		if m.q.Now().UnixMilli() > m.rec.FenceUntilMs-m.opts.Fence.Milliseconds()/2 {
			// Half the fence spent: renew it before it lapses.
			if err := m.fence(ctx, stepCopy, true); err != nil {
				return err
			}
		}
		jobs, err := m.q.readMoveBatch(ctx, m.src, m.opts.Batch)
		if err != nil || len(jobs) == 0 {
			return err
		}
		if err := m.to.writeMoveBatch(ctx, m.dst, jobs, m.src); err != nil {
			return err
		}
		n, stale, err := m.q.clearMoveBatch(ctx, m.src, jobs, m.same)
		if err != nil {
			return err
		}
		if err := m.to.dropStaleCopies(ctx, m.dst, m.src, stale, m.same); err != nil {
			return err
		}
		m.rec.Done += int64(n)
		if err := m.after("batch"); err != nil {
			return err
		}
	}
}

// adopt makes the destination's copies claimable: the tenant's limits
// override goes along (to another queue), and the destination's fenced
// lanes are handed back.
//
// Keys: the source's S (1, "tl", type, itemSpace) read, the destination's
// read and set when it has none; those of unfenceZone at the destination.
func (m *mover) adopt(ctx context.Context) error {
	if !m.same {
		var over []byte
		err := m.q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			over, err = tr.Get(m.q.k.tenantLimitKey(m.src.taskType, m.src.itemSpace)).Get()
			return err
		})
		if err != nil {
			return err
		}
		if over != nil {
			k := m.to.k.tenantLimitKey(m.dst.taskType, m.dst.itemSpace)
			err := m.to.transact(ctx, func(tr kv.Transaction, _ bool) error {
				v, err := tr.Get(k).Get()
				if err == nil && v == nil {
					tr.Set(k, over)
				}
				return err
			})
			// This handle claims under the copied limits at once, as after
			// SetTenantLimits (other processes within limitsRefresh).
			m.to.limits.Delete(m.dst.taskType)
			if err != nil {
				return err
			}
		}
	}
	if err := m.to.unfenceZone(ctx, m.dst, m.rec.Token); err != nil {
		return err
	}
	// A lane the fence did not hold (a lane number of the source's above
	// every count it knew of) gets its pointer here: no copied job is left
	// without one.
	return m.to.adoptAllLanes(ctx, m.dst)
}

// eachTenantType runs one over each task type of a tenant operation (the
// one named, or every type the tenant has zones of), summing the jobs it
// moved, adopted or deleted; it stops at the first error.
func (q *Queue) eachTenantType(ctx context.Context, itemSpace, taskType, verb string, one func(taskType string) (int64, bool, error)) (TenantResult, error) {
	var res TenantResult
	types, err := q.tenantTypes(ctx, itemSpace, taskType)
	if err != nil {
		return res, fmt.Errorf("quick: %s tenant %q: %w", verb, itemSpace, err)
	}
	res.TaskTypes = types
	for _, tt := range types {
		n, resumed, err := one(tt)
		res.Jobs += n
		res.Resumed = res.Resumed || resumed
		if err != nil {
			return res, fmt.Errorf("quick: %s tenant %s/%q: %w", verb, tt, itemSpace, err)
		}
	}
	return res, nil
}
