package quick

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
)

// Lanes inside a zone (docs/design.md, "Two levels").
//
// A zone spreads new jobs over n hash lanes (laneOfID(id, n)), n kept in
// the zone meta Z (2) (Options.ZoneLanes when absent). Each lane has its own
// pointer and lane lease, so n workers can drain one zone at once. A job
// keeps the lane it was placed in for life, and a lane keeps its pointer
// while it holds a job, so changing n never moves a job nor loses one: new
// jobs go by the new count, and lanes that the new count no longer names
// drain and vanish (their pointer goes when a claim finds them empty).
// Enqueue reads the meta through a snapshot, so a resize makes no enqueue
// conflict; only claims that grow the zone read it serializably.
//
// Automatic growth. A claim that leaves vested jobs behind in its lane
// (More) after taking Max doubles the zone's lanes, up to
// Options.MaxZoneLanes, when both:
//   - the oldest job it took had waited at least zoneGrowWait (1 s) since
//     it vested: a lane serves one claim at a time, about one claim per
//     commit latency (~10 ms on FDB) of Max jobs, so a one-second wait in
//     a lane means a backlog of about 100×Max jobs that one lane at a time
//     cannot drain as fast as the fleet could; a short burst that the next
//     claim clears never grows a zone;
//   - the jobs it took (up to 8 of them) all hash to this lane under the
//     current count: they were placed under it, so the current lanes are
//     the ones backlogged. A backlog left from before the last growth sits
//     in lanes its jobs were hashed to by a smaller count, and growing
//     again would not spread it (its jobs keep their lanes), so it does
//     not: the zone grows by at most one doubling per backlog generation,
//     not once per claim.
//
// Growth at enqueue. A backlog enqueued while no worker claims (workers
// down for a deploy, or not started yet) never meets a claim that grows its
// zone before it is all in place, in the lanes of the count it found: one
// lane for a new zone, which one claim at a time then drains however many
// workers come. So an enqueue grows the zone too, when a lane it places a
// job in has an unleased pointer that vested zoneStaleMs (2 s) ago or more:
// no claim has taken that lane since, while it had work. The lane state is
// read anyway (cover), so the check costs no read; growing costs one set
// of Z (2) and a read-conflict key on it (enqueues read it at snapshot):
// a count written from a stale read would undo an operator's
// SetZoneLanes committed meanwhile (issue 22), so the growing enqueue
// conflicts with it (and with another growth), retries and grows from the
// count it then reads.
// The jobs of the transaction that grows are placed by the old count; the
// next transactions spread theirs over the new lanes. New vested work's
// pointer is filed at the last ms of the second before its own
// (pointer.go, freshMs), up to 1,000 ms before it was written, hence 2 s
// and not zoneGrowWait alone.
//
// Growth never shrinks a zone; SetZoneLanes sets any count from 1 to 1024.

// zoneGrowWait is how long the oldest job a claim takes must have waited
// for the claim to grow its zone (lanes.GrowWait).
const zoneGrowWait = lanes.GrowWait

// zoneStaleMs is how long an unleased pointer must have been vested for an
// enqueue into its lane to grow the zone: zoneGrowWait, plus the second a
// new-work pointer's filing time may lag its write (freshMs).
const zoneStaleMs = int64(zoneGrowWait/time.Millisecond) + pointerBucketMs

// zoneGrowSample is how many of the jobs a claim took are checked to hash
// to its lane under the current count.
const zoneGrowSample = 8

// growZone doubles the lane count of l's zone when the claim that took
// taken from l found it backlogged (see above). metaF is the zone meta,
// read through a snapshot with the lane.
//
// Keys: a read-conflict key on Z (2) and a set of it, only when growing.
//
// It returns the zone's lane count after the claim.
func (q *Queue) growZone(tr kv.Transaction, l laneRef, metaF kv.Future[[]byte], taken []zjobKey, nowMs int64) (int, error) {
	n, err := q.zoneLanes(metaF)
	if err != nil || !zoneBacklogged(taken, nowMs) || n >= q.opts.MaxZoneLanes {
		return n, err
	}
	for _, jk := range taken[:min(len(taken), zoneGrowSample)] {
		if laneOfID(jk.ID, n) != l.lane {
			return n, nil
		}
	}
	// Two claims growing the zone at once conflict, so neither writes a
	// count computed from a stale one.
	if err := tr.AddReadConflictKey(l.z.metaKey()); err != nil {
		return n, err
	}
	grown := lanes.Grow(n, q.opts.MaxZoneLanes)
	m := zoneMeta{Lanes: int64(grown)}
	tr.Set(l.z.metaKey(), m.marshal())
	// In an operator's words (task type, tenant, how long work waited);
	// the lane and priority the claim found backlogged are for Debug.
	waited := time.Duration(nowMs-taken[0].VestMs) * time.Millisecond
	q.opts.Logger.Info("quick: a tenant's jobs wait for workers; spreading them over more lanes so more workers take them at once",
		"task_type", l.z.taskType, "tenant", l.z.itemSpace, "lanes", grown, "waited", waited)
	q.opts.Logger.Debug("quick: zone grows", "lane", l.String(), "lanes", grown, "waited", waited)
	return grown, nil
}

// zoneBacklogged reports whether a claim that took taken (in vesting order)
// and left vested jobs behind found its lane backlogged: the oldest job it
// took waited at least zoneGrowWait.
func zoneBacklogged(taken []zjobKey, nowMs int64) bool {
	return len(taken) > 0 && lanes.Backlogged(taken[0].VestMs, nowMs)
}

// Growth on contention, in short-job mode. A zone of one lane that many
// producers enqueue into at once makes them conflict with each other: a job
// arriving in an empty lane creates its pointer and writes its lane state,
// which every other enqueue into that lane reads serializably (the
// empty-zone race, docs/design.md), and a claim that leases or hands back
// the lane writes it too. With a queue that keeps up, every claim leaves the
// lane empty, so the conflicts come after every claim. In short-job mode,
// whose claims hold the lane for a whole round of hand-outs, it cost 3.7
// conflicts per job at 2,000 jobs/s from 32 producers, which then reached
// 430 jobs/s (docs/performance.md, "Steady arrivals"). So an enqueue whose
// previous attempt conflicted doubles the short-job zones it places jobs
// in, up to lanes.ContendedMax (and MaxZoneLanes): later enqueues spread
// over more lane states, the conflicts fall with each doubling, and that
// ends the growth (measured: 0.49 conflicts per job, 1,830 jobs/s).
//
// Not with per-job leases: a process's claims per second are bounded
// (claimers in flight, each a commit that moves every job it takes), and a
// zone that keeps up is drained a lane per claim, so a job waits about
// lanes ÷ claims-per-second for its lane's turn; more lanes took the same
// run's p50 from 33 to 120–140 ms and p99 from 77 to 450–540 ms for 0.5
// fewer conflicts per job, while its producers kept 2,000 jobs/s anyway.
//
// It grows a zone only when the attempt reads the count the conflicting
// attempt read (otherwise another transaction grew it meanwhile, and the
// conflict may have been with that growth), and only for a transaction of
// at most contendedZones zones (a batch over many tenants that conflicts
// says little about any one, and growing them all would make it large).
// Enqueue and the other calls that run their own transactions see their
// conflicts; EnqueueTx runs in the caller's and cannot, so a zone fed only
// that way grows by claims and SetZoneLanes.
//
// contendedZones is how many zones an enqueue transaction may place jobs
// in for its conflicts to grow them.
const contendedZones = 4

// contendedZones returns the short-job zones, by prefix, that an enqueue
// attempt should grow because its previous attempt conflicted (see
// above). lanesOf holds the lane counts this attempt read.
func (q *Queue) contendedZones(call *zenqueueCall, c *coverer, lanesOf map[string]int) map[string]bool {
	if !call.contended || len(lanesOf) > contendedZones || mutant.On("quick.contended-no-grow") {
		return nil
	}
	limit := min(lanes.ContendedMax, q.opts.MaxZoneLanes)
	var out map[string]bool
	for _, it := range c.items {
		k := string(it.l.z.space.Bytes())
		n, ok := lanesOf[k]
		if !ok || out[k] || !q.opts.TaskTypes[it.l.z.taskType].ShortJobs {
			continue
		}
		if prev, ok := call.prevLanes[k]; !ok || prev != n || n >= limit {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[k] = true
	}
	return out
}

// growBackloggedZones doubles the lanes of each zone in which an
// enqueue's cover found a backlogged lane (see "Growth at enqueue" above),
// up to Options.MaxZoneLanes, and of each zone in contended (growth on
// contention), up to lanes.ContendedMax. lanesOf holds the zones' counts
// the enqueue placed its jobs by, keyed by zone prefix.
//
// Keys: a read-conflict key on Z (2) and a set of it per zone it grows.
func (q *Queue) growBackloggedZones(tr kv.Transaction, c *coverer, lanesOf map[string]int, contended map[string]bool) error {
	var done map[string]bool
	for _, it := range c.items {
		k := string(it.l.z.space.Bytes())
		if !it.backlogged && !contended[k] {
			continue
		}
		n, ok := lanesOf[k]
		if !ok || n >= q.opts.MaxZoneLanes || done[k] {
			continue
		}
		if done == nil {
			done = map[string]bool{}
		}
		done[k] = true // once per zone and transaction
		limit := q.opts.MaxZoneLanes
		if !it.backlogged {
			limit = min(limit, lanes.ContendedMax)
		}
		grown := lanes.Grow(n, limit)
		if grown == n {
			continue
		}
		m := zoneMeta{Lanes: int64(grown)}
		if !mutant.On("quick.grow-blind") {
			if err := tr.AddReadConflictKey(it.l.z.metaKey()); err != nil {
				return err
			}
		}
		tr.Set(it.l.z.metaKey(), m.marshal())
		if it.backlogged {
			q.opts.Logger.Debug("quick: growing a zone whose lane waits unclaimed", "zone", it.l.String(), "lanes", grown)
		} else {
			q.opts.Logger.Debug("quick: growing a zone whose enqueues conflict", "zone", it.l.String(), "lanes", grown)
		}
	}
	return nil
}

// SetZoneLanes sets how many hash lanes the zone of a task type and item
// space spreads its new jobs over (LayoutZones), from 1 to 1024, while
// workers run: jobs already enqueued keep their lanes and drain from them,
// so growing or shrinking moves no job and loses none. Claims may grow the
// zone again later (up to Options.MaxZoneLanes) if it backlogs.
//
// Keys: sets Z (2).
func (q *Queue) SetZoneLanes(ctx context.Context, taskType, itemSpace string, n int) error {
	if err := validTaskType(taskType); err != nil {
		return err
	}
	if len(itemSpace) > MaxItemSpaceLen {
		return fmt.Errorf("%w: item space of %d bytes, over %d", ErrInvalidOption, len(itemSpace), MaxItemSpaceLen)
	}
	if n < 1 || n > maxZoneLanes {
		return fmt.Errorf("%w: %d lanes is outside [1, %d]", ErrInvalidOption, n, maxZoneLanes)
	}
	z := q.zoneOf(taskType, itemSpace)
	m := zoneMeta{Lanes: int64(n)}
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(z.metaKey(), m.marshal())
		return nil
	})
	if err != nil {
		return fmt.Errorf("quick: set lanes of zone %s/%q: %w", taskType, itemSpace, err)
	}
	return nil
}
