package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Tenants moved, adopted and deleted while everything else runs (issue 24,
// Config.MoveEvery). The mover takes one tenant at a time (never the empty
// one, the hot one, a limited one or one whose lanes the unpointer strips:
// their checks count runs per tenant and lane, which a move's re-runs
// would blur) and, in turn:
//
//   - moves it within the main database, to a new subspace;
//   - moves it to a second database (the away one, served by workers of
//     its own) and, MoveStay later, back to a new subspace of the main one;
//   - moves it to a third database that nothing serves (the side one),
//     lets producers enqueue there for MoveStay, then copies its zones' keys
//     byte for byte into a new subspace of the main database as a user's
//     tool would, deletes the tenant at the side (DeleteTenant) and adopts
//     the copy (AdoptTenant) in the main one;
//   - enqueues a batch of jobs into a tenant made for the purpose, lets the
//     workers take some, and deletes it (DeleteTenant).
//
// Every operation runs through the fault-injecting databases, is now and
// then interrupted (its context cancelled after a step or batch) and is
// called again until it completes. Before each move the mover seeds the
// tenant with jobs of its own, slow ones (leased at the fence) and delayed
// ones (pending at it), and the move holds still for fenceHold once it has
// fenced both zones, as a slow one would: a claim of a seeded job then, at
// either end, is a broken fence. The producers follow the tenant: its
// route names the database they enqueue into and each database's place
// for it (Options.ZoneSpace of every handle of that database), and is
// flipped to the destination as a move starts; what an enqueue in flight
// leaves in the source is moved with the rest, or after the move is a new
// zone there, run there. For the adoption the producers leave the tenant
// alone from the copy until the adoption is done, once the enqueues in
// flight into it have returned: a job landing at the side after the copy
// would be deleted with it.
//
// The checker reads every database: jobs, dead letters, lookup index
// entries and the handlers' history records, which each completion writes
// in its own transaction and so in the database the job lives in. A job
// leased when a move fenced it runs once more at the destination (a
// per-job lease's next attempt; a short-job hand-out at the same attempt):
// the checker counts those runs (FenceReruns) and still requires one
// committed completion, under the job's last claim. Of a deleted tenant's
// jobs, none may be claimed after its deletion returned, and no key of it
// may be left.

// Databases of a run: the main one (Run's or RunOn's), and with moves the
// away one and the side one (memkv, with the main one's latencies when it
// is memkv).
const (
	mainDB = iota
	awayDB
	sideDB
	numDBs
)

// Move kinds, as MoveRec.Kind says.
const (
	MoveWithin = "within" // to another subspace of the main database
	MoveAway   = "away"   // to the away database
	MoveBack   = "back"   // from the away database to the main one
	MoveSide   = "side"   // to the side database, for an adoption
	MoveAdopt  = "adopt"  // copied from the side and adopted in the main one
)

// deleteProducerID is the producer of the jobs of tenants made to be
// deleted; deleteJobs is how many the mover enqueues into each.
const (
	deleteProducerID = 92
	deleteJobs       = 16
)

// moveProducerID is the producer of the jobs the mover enqueues into a
// tenant before moving it (seedJobs, seedSlow of them slow): whatever the
// producers' rate, every move carries jobs, some leased at its fence.
const (
	moveProducerID = 93
	seedJobs       = 8
	seedSlow       = 3
)

// MoveRec is one tenant operation of the mover: the jobs it moved or
// adopted, between From and To (real time).
type MoveRec struct {
	Tenant   string
	Kind     string
	From, To time.Time
	Jobs     int64
}

// fenceHold is how long a move holds still once it has fenced its zones,
// and fenceMargin how long after the fence a claim's record may still
// show a claim that committed before it (the worker dates a claim once it
// has returned). The check covers the jobs the mover seeded (seed): those
// are always in the tenant's current zones, which the move fences, where
// a producer's enqueue that landed in a source after its move, or a
// requeue into a database the tenant left, is a zone of its own.
const (
	fenceHold   = 2 * time.Second
	fenceMargin = time.Second
)

// FenceRec is a stretch of real time during which a move held the zones of
// Tenant and TaskType fenced, from when its fence was in place at both
// ends (From) until it went on (To).
type FenceRec struct {
	Tenant, TaskType string
	From, To         time.Time
}

// DeleteRec is a deletion of a tenant the mover made for it.
type DeleteRec struct {
	Tenant   string
	From, To time.Time
	Jobs     int64
}

// routes is where each tenant's zones are: which database its producers
// enqueue into, and its place (Options.ZoneSpace) in each database.
type routes struct {
	mu    sync.Mutex
	db    map[string]int                    // absent: main
	place [numDBs]map[string]tuple.Subspace // absent: home (main), unused (others)
	ever  [numDBs]map[string][]tuple.Subspace
	// busy names the tenant the mover works on (the resizer leaves it
	// alone: lanes added under a fence are not fenced), held the one the
	// producers leave alone; inflight counts the enqueues into a tenant
	// that have not returned.
	busy, held map[string]bool
	inflight   map[string]int
	gen        int64
}

// placeIn is Options.ZoneSpace of database dbi's handles.
func (h *harness) placeIn(dbi int, tenant string) tuple.Subspace {
	h.routes.mu.Lock()
	p, ok := h.routes.place[dbi][tenant]
	h.routes.mu.Unlock()
	switch {
	case ok:
		return p
	case dbi == mainDB:
		return h.homeSpace(tenant)
	}
	return h.movedData.Sub(tenant, int64(-1)) // never used: nothing is placed there
}

// placesIn lists every place tenant's zones have had in database dbi.
func (r *routes) placesIn(h *harness, dbi int, tenant string) []tuple.Subspace {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.ever[dbi][tenant])
	if dbi == mainDB {
		out = append(out, h.homeSpace(tenant))
	}
	return out
}

// newPlace is a fresh subspace for tenant's zones.
func (h *harness) newPlace(tenant string) tuple.Subspace {
	h.routes.mu.Lock()
	defer h.routes.mu.Unlock()
	h.routes.gen++
	return h.movedData.Sub(tenant, h.routes.gen)
}

// routeTo places tenant at place in database dbi and sends its producers
// there.
func (r *routes) routeTo(tenant string, dbi int, place tuple.Subspace) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		r.db = map[string]int{}
	}
	r.db[tenant] = dbi
	if r.place[dbi] == nil {
		r.place[dbi], r.ever[dbi] = map[string]tuple.Subspace{}, map[string][]tuple.Subspace{}
	}
	r.place[dbi][tenant] = place
	r.ever[dbi][tenant] = append(r.ever[dbi][tenant], place)
}

// enter returns the database tenant's producers enqueue into, counting
// the enqueue in flight until leave; ok is false while the tenant is held.
func (r *routes) enter(tenant string) (dbi int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[tenant] {
		return 0, false
	}
	if r.inflight == nil {
		r.inflight = map[string]int{}
	}
	r.inflight[tenant]++
	return r.db[tenant], true
}

func (r *routes) leave(tenant string) {
	r.mu.Lock()
	r.inflight[tenant]--
	r.mu.Unlock()
}

func (r *routes) dbOf(tenant string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.db[tenant]
}

func (r *routes) isBusy(tenant string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy[tenant]
}

func (r *routes) setBusy(tenant string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy == nil {
		r.busy = map[string]bool{}
	}
	r.busy[tenant] = on
}

// hold keeps the producers off tenant and waits until its enqueues in
// flight have returned (each is bounded by its 30 s timeout).
func (r *routes) hold(ctx context.Context, tenant string) {
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]bool{}
	}
	r.held[tenant] = true
	r.mu.Unlock()
	for {
		r.mu.Lock()
		n := r.inflight[tenant]
		r.mu.Unlock()
		if n == 0 || !sleep(ctx, 5*time.Millisecond) {
			return
		}
	}
}

func (r *routes) release(tenant string) {
	r.mu.Lock()
	delete(r.held, tenant)
	r.mu.Unlock()
}

// workedDBs are the databases workers serve.
func (h *harness) workedDBs() []int {
	if h.dbAt(awayDB) != nil {
		return []int{mainDB, awayDB}
	}
	return []int{mainDB}
}

// dbAt is database dbi of the run (nil: not in this run).
func (h *harness) dbAt(dbi int) *kv.FaultyDB {
	if dbi == mainDB {
		return h.db
	}
	return h.extra[dbi]
}

// movable lists the tenants the mover may take (see the file comment).
func (h *harness) movable() []string {
	var out []string
	ts := h.tenants()
	for _, t := range ts[min(2, len(ts)):] { // not "" nor the hot t00
		if h.isUnpointable(t) || (h.cfg.Limits && slices.Contains(h.limitedTenants(), t)) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// moveCounters are the mover's figures for the report.
type moveCounters struct {
	movesWithin, movesBetween, adopts, deletes atomic.Int64
	interrupted, moved, adopted, deleted       atomic.Int64
	seeded                                     atomic.Int64
}

// moveLoop runs the mover's operations in turn, MoveEvery apart on
// average, while ctx lasts, and at least one of each in any case (those
// left when ctx ends run with the producers stopped).
func (h *harness) moveLoop(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 600))
	ops := []func(context.Context, *rand.Rand, string){h.moveWithin, h.moveAwayAndBack, h.moveAndAdopt, h.deleteOne}
	ts := h.movable()
	if len(ts) == 0 {
		return
	}
	octx := context.WithoutCancel(ctx)
	for i := 0; ; i++ {
		if !sleep(ctx, time.Duration(rng.ExpFloat64()*float64(h.cfg.MoveEvery))) && i >= len(ops) {
			return
		}
		t := ts[rng.IntN(len(ts))]
		h.routes.setBusy(t, true)
		ops[i%len(ops)](octx, rng, t)
		h.routes.setBusy(t, false)
	}
}

// pinned opens a handle of database dbi that places tenant at place (a
// move's source: the database's own handles place it at the destination
// from the move's start).
func (h *harness) pinned(ctx context.Context, dbi int, tenant string, place tuple.Subspace) (*quick.Queue, error) {
	opts := h.queueOptions(dbi, clock.Real(), false)
	opts.ZoneSpace = func(t string) tuple.Subspace {
		if t == tenant {
			return place
		}
		return h.placeIn(dbi, t)
	}
	return quick.Open(ctx, h.dbAt(dbi), h.space, opts)
}

// tenantOp runs op (a MoveTenant, AdoptTenant or DeleteTenant call of
// one task type) until it succeeds, interrupting a third of the calls
// after a random number of progress reports (a crash, as far as the
// operation's record knows): each is resumed by the next call.
func (h *harness) tenantOp(ctx context.Context, rng *rand.Rand, what string, op func(ctx context.Context, progress func(quick.TenantProgress)) (quick.TenantResult, error)) int64 {
	for try := 0; ; try++ {
		cctx, cancel := context.WithCancel(ctx)
		stopAt := 0
		if rng.IntN(3) == 0 {
			stopAt = 1 + rng.IntN(4)
		}
		n := 0
		res, err := op(cctx, func(quick.TenantProgress) {
			if n++; n == stopAt {
				cancel()
			}
		})
		cancel()
		if err == nil {
			return res.Jobs
		}
		h.interrupted.Add(1)
		if try >= 100 {
			h.rec.problem(fmt.Sprintf("%s failed %d times, the last: %v", what, try+1, err))
			return res.Jobs
		}
		h.logger.Warn("soak: tenant operation stopped; resuming it", "op", what, "err", err)
	}
}

// move moves tenant's zones of every work type from to to. Once the
// first call of a type has fenced both zones it holds still for fenceHold
// (a slow move): no claim may take a job of that tenant and type then, at
// either end, which the checker verifies (a fence left out lets the
// source's claims go on).
func (h *harness) move(ctx context.Context, rng *rand.Rand, tenant string, from, to *quick.Queue) int64 {
	var jobs int64
	for _, tt := range h.limitTypes() {
		held := false
		jobs += h.tenantOp(ctx, rng, "move "+tt, func(ctx context.Context, p func(quick.TenantProgress)) (quick.TenantResult, error) {
			hold := func(tp quick.TenantProgress) {
				if tp.Step == "fence" && !held {
					held = true
					began := time.Now()
					sleep(ctx, fenceHold)
					h.rec.fence(FenceRec{Tenant: tenant, TaskType: tt, From: began, To: time.Now()})
				}
				p(tp)
			}
			return from.MoveTenant(ctx, tenant, to, quick.MoveOptions{TaskType: tt, Batch: 4 + rng.IntN(29), Progress: hold})
		})
	}
	h.moved.Add(jobs)
	return jobs
}

// moveTo moves tenant from where it is to a new place in database dbi,
// routing its producers there first, and records the move.
func (h *harness) moveTo(ctx context.Context, rng *rand.Rand, tenant string, dbi int, kind string) tuple.Subspace {
	fromDB := h.routes.dbOf(tenant)
	from, err := h.pinned(ctx, fromDB, tenant, h.placeIn(fromDB, tenant))
	if err != nil {
		h.rec.problem(fmt.Sprintf("open a move's source: %v", err))
		return h.placeIn(fromDB, tenant)
	}
	h.seed(ctx, rng, tenant, fromDB)
	place := h.newPlace(tenant)
	began := time.Now()
	h.routes.routeTo(tenant, dbi, place)
	to, err := h.adminIn(ctx, dbi, false)
	if err != nil {
		h.rec.problem(fmt.Sprintf("open a move's destination: %v", err))
		return place
	}
	jobs := h.move(ctx, rng, tenant, from, to)
	h.rec.move(MoveRec{Tenant: tenant, Kind: kind, From: began, To: time.Now(), Jobs: jobs})
	return place
}

// seed enqueues seedJobs jobs into tenant at database dbi, where it is
// now: seedSlow slow ones (run longer than the wait after them, so that
// they are leased at the fence when a worker has taken them), the others
// delayed past the move's start (pending at the fence). It then waits a
// little for the workers to claim.
func (h *harness) seed(ctx context.Context, rng *rand.Rand, tenant string, dbi int) {
	q, err := h.adminIn(ctx, dbi, false)
	if err != nil {
		return
	}
	for i := range seedJobs {
		kind, delay := KindSlow, time.Duration(0)
		if i >= seedSlow {
			kind, delay = KindNormal, time.Second+time.Duration(rng.Int64N(int64(3*time.Second)))
		}
		seq := int(h.seeded.Add(1))
		body, _ := json.Marshal(payload{Kind: kind, Producer: moveProducerID, Seq: seq})
		id := q.NewID()
		tt := h.limitTypes()[rng.IntN(len(h.limitTypes()))]
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := q.Enqueue(ectx, quick.NewJob{ID: id, TaskType: tt, ItemSpace: tenant, Payload: body, Delay: delay, UniqueKey: h.uniqueKey(id)})
		cancel()
		h.rec.job(JobRec{ID: id, Kind: kind, Producer: moveProducerID, Seq: seq, TaskType: tt, Tenant: tenant, Uncertain: err != nil})
	}
	sleep(ctx, 300*time.Millisecond+time.Duration(rng.Int64N(int64(700*time.Millisecond))))
}

// moveWithin moves tenant to a new subspace of the main database.
func (h *harness) moveWithin(ctx context.Context, rng *rand.Rand, tenant string) {
	h.moveTo(ctx, rng, tenant, mainDB, MoveWithin)
	h.movesWithin.Add(1)
}

// moveAwayAndBack moves tenant to the away database, where its workers
// run its jobs for MoveStay, and back to a new subspace of the main one.
func (h *harness) moveAwayAndBack(ctx context.Context, rng *rand.Rand, tenant string) {
	h.moveTo(ctx, rng, tenant, awayDB, MoveAway)
	sleep(ctx, h.cfg.MoveStay)
	h.moveTo(ctx, rng, tenant, mainDB, MoveBack)
	h.movesBetween.Add(2)
}

// moveAndAdopt moves tenant to the side database, where nothing runs it,
// lets the producers enqueue there for MoveStay, then copies its zones
// byte for byte into a new subspace of the main database, deletes it at
// the side and adopts the copy.
func (h *harness) moveAndAdopt(ctx context.Context, rng *rand.Rand, tenant string) {
	side := h.moveTo(ctx, rng, tenant, sideDB, MoveSide)
	sleep(ctx, h.cfg.MoveStay)
	h.routes.hold(ctx, tenant)
	defer h.routes.release(tenant)
	began := time.Now()
	dest := h.newPlace(tenant)
	if err := h.rawCopy(ctx, h.dbAt(sideDB), side, h.db, dest); err != nil {
		h.rec.problem(fmt.Sprintf("copy tenant %.8q… from the side: %v", tenant, err))
		return
	}
	sq, err := h.adminIn(ctx, sideDB, false)
	if err != nil {
		h.rec.problem(fmt.Sprintf("open the side queue: %v", err))
		return
	}
	for _, tt := range h.limitTypes() {
		h.tenantOp(ctx, rng, "delete at the side "+tt, func(ctx context.Context, p func(quick.TenantProgress)) (quick.TenantResult, error) {
			return sq.DeleteTenant(ctx, tenant, quick.DeleteOptions{TaskType: tt, Batch: 4 + rng.IntN(29), Progress: p})
		})
	}
	mq, err := h.pinned(ctx, mainDB, tenant, dest)
	if err != nil {
		h.rec.problem(fmt.Sprintf("open the adopting queue: %v", err))
		return
	}
	var jobs int64
	for _, tt := range h.limitTypes() {
		jobs += h.tenantOp(ctx, rng, "adopt "+tt, func(ctx context.Context, p func(quick.TenantProgress)) (quick.TenantResult, error) {
			return mq.AdoptTenant(ctx, tenant, quick.AdoptOptions{TaskType: tt, Batch: 4 + rng.IntN(29), Progress: p})
		})
	}
	// The producers go to the adopted zones only now: an enqueue there
	// before the copy would have its lane states overwritten by it.
	h.routes.routeTo(tenant, mainDB, dest)
	h.adopts.Add(1)
	h.adopted.Add(jobs)
	h.rec.move(MoveRec{Tenant: tenant, Kind: MoveAdopt, From: began, To: time.Now(), Jobs: jobs})
}

// rawCopy copies every key under from in src to the same suffix under to
// in dst, as a user's tool copies a subspace: a snapshot read, then
// transactions of at most a megabyte.
func (h *harness) rawCopy(ctx context.Context, src kv.Database, from tuple.Subspace, dst kv.Database, to tuple.Subspace) error {
	b, e := from.Range()
	var kvs []kv.KeyValue
	err := src.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		return err
	}
	for len(kvs) > 0 {
		n, size := 0, 0
		for n < len(kvs) && (n == 0 || size+len(kvs[n].Key)+len(kvs[n].Value) < 1<<20) {
			size += len(kvs[n].Key) + len(kvs[n].Value)
			n++
		}
		batch := kvs[:n]
		err := dst.Transact(ctx, func(tr kv.Transaction) error {
			for _, p := range batch {
				tr.Set(append(slices.Clone(to.Bytes()), p.Key[len(from.Bytes()):]...), p.Value)
			}
			return nil
		})
		if err != nil {
			return err
		}
		kvs = kvs[n:]
	}
	return nil
}

// deleteOne enqueues jobs into a tenant made to be deleted (named after
// the tenant drawn), half of them delayed past the deletion, lets the
// workers take some of the others, and deletes it.
func (h *harness) deleteOne(ctx context.Context, rng *rand.Rand, drawn string) {
	q, err := h.admin(ctx, false)
	if err != nil {
		return
	}
	n := h.deletes.Add(1)
	tenant := fmt.Sprintf("del%02d-%.3s", n, drawn)
	for i := range deleteJobs {
		seq := int(n)*deleteJobs + i
		body, _ := json.Marshal(payload{Kind: KindNormal, Producer: deleteProducerID, Seq: seq})
		id := q.NewID()
		tt := h.limitTypes()[rng.IntN(len(h.limitTypes()))]
		var delay time.Duration
		if i%2 == 0 {
			delay = time.Minute // still pending at the deletion
		}
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := q.Enqueue(ectx, quick.NewJob{ID: id, TaskType: tt, ItemSpace: tenant, Payload: body, Delay: delay, UniqueKey: h.uniqueKey(id)})
		cancel()
		h.rec.job(JobRec{ID: id, Kind: KindNormal, Producer: deleteProducerID, Seq: seq, TaskType: tt, Tenant: tenant, Uncertain: err != nil})
	}
	sleep(ctx, time.Duration(rng.Int64N(int64(300*time.Millisecond))))
	began := time.Now()
	var jobs int64
	for _, tt := range h.limitTypes() {
		jobs += h.tenantOp(ctx, rng, "delete "+tt, func(ctx context.Context, p func(quick.TenantProgress)) (quick.TenantResult, error) {
			return q.DeleteTenant(ctx, tenant, quick.DeleteOptions{TaskType: tt, Batch: 2 + rng.IntN(6), Progress: p})
		})
	}
	h.deleted.Add(jobs)
	h.rec.deleteTenant(DeleteRec{Tenant: tenant, From: began, To: time.Now(), Jobs: jobs})
}

// leftOf lists what is left at the end of what the mover cleared: keys
// under a deleted tenant's zones, pointers naming it, and anything under
// the tenant's places at the side (deleted there after the copy) or its
// pointers there.
func (h *harness) leftOf(ctx context.Context, deletes []DeleteRec, moves []MoveRec) ([]string, error) {
	var out []string
	count := func(db kv.Database, r kv.KeyRange) (int, error) {
		var n int
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: 100}).GetSliceWithError()
			n = len(kvs)
			return err
		})
		return n, err
	}
	pointersOf := func(db kv.Database, tenant string) (int, error) {
		b, e := h.space.Sub(int64(2), "p").Range()
		var n int
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			n = 0
			kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{}).GetSliceWithError()
			for _, p := range kvs {
				if pointerTenant(p.Value) == tenant {
					n++
				}
			}
			return err
		})
		return n, err
	}
	for _, d := range deletes {
		b, e := h.homeSpace(d.Tenant).Range()
		n, err := count(h.db, kv.KeyRange{Begin: b, End: e})
		if err != nil {
			return nil, err
		}
		p, err := pointersOf(h.db, d.Tenant)
		if err != nil {
			return nil, err
		}
		if n+p > 0 {
			out = append(out, fmt.Sprintf("tenant %s was deleted, but %d keys of its zones and %d pointers naming it are left", d.Tenant, n, p))
		}
	}
	if side := h.dbAt(sideDB); side != nil {
		seen := map[string]bool{}
		for _, m := range moves {
			if m.Kind != MoveSide || seen[m.Tenant] {
				continue
			}
			seen[m.Tenant] = true
			n := 0
			for _, place := range h.routes.placesIn(h, sideDB, m.Tenant) {
				b, e := place.Range()
				c, err := count(side, kv.KeyRange{Begin: b, End: e})
				if err != nil {
					return nil, err
				}
				n += c
			}
			p, err := pointersOf(side, m.Tenant)
			if err != nil {
				return nil, err
			}
			if n+p > 0 {
				out = append(out, fmt.Sprintf("tenant %.8q… was copied from the side and deleted there, but %d keys of its zones and %d pointers naming it are left there", m.Tenant, n, p))
			}
		}
	}
	return out, nil
}
