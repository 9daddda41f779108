package soak

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/harness/pages"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Tenants, zones and lanes in the soak (Config Zones): work jobs spread
// over many tenants (item spaces) with one hot, some tenants' zones in
// subspaces of their own, a second work type in short-job mode, and lanes
// resized at random while workers run. The default Config runs the
// no-tenant case: one zone per task type.

// shortType is the work type run in short-job mode (TaskTypeOptions.ShortJobs).
const shortType = "soak-short"

// workTypes are the task types of the producers' jobs.
func (h *harness) workTypes() []string {
	out := []string{workType}
	if h.cfg.ShortShare > 0 {
		out = append(out, shortType)
	}
	if h.cfg.PrefetchRate > 0 {
		out = append(out, prefetchType)
	}
	return out
}

// allTypes are the task types whose queued jobs the soak scans.
func (h *harness) allTypes() []string { return append(h.workTypes(), cronTypes...) }

// tenants lists the item spaces: "" (no tenant) and Config.Tenants more,
// t00 the hot one.
func (h *harness) tenants() []string {
	out := []string{""}
	for i := range h.cfg.Tenants {
		out = append(out, h.tenantName(i))
	}
	return out
}

// tenantName is tenant i's item space: t00, t01, ..., padded to the
// longest name quick takes with Config.LongNames.
func (h *harness) tenantName(i int) string {
	name := fmt.Sprintf("t%02d", i)
	if h.cfg.LongNames {
		name += "-" + strings.Repeat("n", quick.MaxItemSpaceLen-len(name)-1)
	}
	return name
}

// uniqueKey is a work job's unique key with Config.LongNames (none
// otherwise): its own ID, padded to the longest key quick takes, so it never
// meets another job's.
func (h *harness) uniqueKey(id quick.ID) string {
	if !h.cfg.LongNames {
		return ""
	}
	k := "u-" + id.String() + "-"
	return k + strings.Repeat("k", quick.MaxUniqueKeyLen-len(k))
}

// failure is a handler's failure reason, longer than a job keeps with
// Config.LongNames (the stored reason is cut to 2,000 bytes).
func (h *harness) failure(reason string) error {
	if h.cfg.LongNames {
		reason += ": " + strings.Repeat("e", 2_100)
	}
	return errors.New(reason)
}

// pickTenant draws a job's tenant: the hot one HotShare of the time, else
// uniformly among all (the empty one included).
func (h *harness) pickTenant(rng *rand.Rand) string {
	ts := h.tenants()
	if len(ts) == 1 {
		return ""
	}
	if rng.Float64() < h.cfg.HotShare {
		return ts[1]
	}
	return ts[rng.IntN(len(ts))]
}

// ownSpace says whether a tenant keeps its zones in a subspace of its own.
func (h *harness) ownSpace(tenant string) bool {
	if h.cfg.OwnSpaceEvery <= 0 || tenant == "" {
		return false
	}
	var i int
	if _, err := fmt.Sscanf(tenant, "t%d", &i); err != nil {
		return false
	}
	return i%h.cfg.OwnSpaceEvery == 1
}

// homeSpace is where a tenant's zones start in the main database: a
// tenant's own subspace beside the queue's (as its data would be), or the
// queue's default S (2, "z", tenant). The mover (moves.go) places them
// elsewhere later: Options.ZoneSpace is placeIn.
func (h *harness) homeSpace(tenant string) tuple.Subspace {
	if h.ownSpace(tenant) {
		return h.tenantData.Sub(tenant)
	}
	return h.space.Sub(int64(2), "z", tenant)
}

// queueOptions are the options of every queue handle of database dbi:
// a tenant's zones are where the mover last placed them in it.
func (h *harness) queueOptions(dbi int, clk clock.Clock, autoIdem bool) quick.Options {
	return quick.Options{
		Clock:                clk,
		Backoff:              func(int) time.Duration { return h.cfg.backoff() },
		Logger:               h.logger,
		ZoneSpace:            func(t string) tuple.Subspace { return h.placeIn(dbi, t) },
		LaneLeaseTime:        h.cfg.LaneLease,
		AutomaticIdempotency: autoIdem,
		// Every other type keeps its lookup index (the default): cron
		// finds its occurrences by ID.
		TaskTypes: map[string]quick.TaskTypeOptions{shortType: {ShortJobs: true}},
	}
}

// admins holds the producers' and the harness's queue handles, one per
// database and automatic idempotency setting, all on real time.
type admins struct {
	mu sync.Mutex
	qs map[adminKey]*quick.Queue
}

type adminKey struct {
	dbi      int
	autoIdem bool
}

// admin returns a queue handle of the main database on real time.
func (h *harness) admin(ctx context.Context, autoIdem bool) (*quick.Queue, error) {
	return h.adminIn(ctx, mainDB, autoIdem)
}

// adminIn returns a queue handle of database dbi on real time.
func (h *harness) adminIn(ctx context.Context, dbi int, autoIdem bool) (*quick.Queue, error) {
	k := adminKey{dbi, autoIdem}
	h.adm.mu.Lock()
	defer h.adm.mu.Unlock()
	if q := h.adm.qs[k]; q != nil {
		return q, nil
	}
	q, err := quick.Open(ctx, h.dbAt(dbi), h.space, h.queueOptions(dbi, clock.Real(), autoIdem))
	if err != nil {
		return nil, err
	}
	if h.adm.qs == nil {
		h.adm.qs = map[adminKey]*quick.Queue{}
	}
	h.adm.qs[k] = q
	return q, nil
}

// autoIdemAvailable says whether the engine under the soak has automatic
// idempotency (kv.TransactionOptions.SetAutomaticIdempotency, FDB 7.3's
// automatic_idempotency): where it does not, the queues asked for it fall
// back to markers, and the report says so.
func (h *harness) autoIdemAvailable() bool {
	tr, err := h.db.CreateTransaction()
	if err != nil {
		return false
	}
	defer tr.Cancel()
	_, ok := any(tr.Options()).(interface{ SetAutomaticIdempotency() error })
	return ok
}

// zoneLaneSetter is quick's SetZoneLanes, asserted so that the soak builds
// whether or not the zones claim path is merged; a run that never resized
// while asked to reports it (Report.Resizes).
type zoneLaneSetter interface {
	SetZoneLanes(ctx context.Context, taskType, itemSpace string, n int) error
}

// resize changes the lanes of a random zone (the hot tenant's half the
// time) every ResizeEvery on average while ctx lasts, up and down at random.
func (h *harness) resize(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 300))
	ts := h.tenants()
	for sleep(ctx, time.Duration(rng.ExpFloat64()*float64(h.cfg.ResizeEvery))) {
		q, err := h.admin(ctx, false)
		if err != nil {
			continue
		}
		s, ok := any(q).(zoneLaneSetter)
		if !ok {
			h.resizeErrs.Add(1)
			continue
		}
		tenant := ts[rng.IntN(len(ts))]
		if len(ts) > 1 && rng.IntN(2) == 0 {
			tenant = ts[1]
		}
		if h.isUnpointable(tenant) {
			continue // its stripped lanes must stay lanes new jobs land in
		}
		if h.routes.isBusy(tenant) {
			continue // a move's fence holds the lanes the source had: no lanes added under it
		}
		tt := h.limitTypes()[rng.IntN(len(h.limitTypes()))]
		n := 1 + rng.IntN(h.cfg.MaxLanes)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err = s.SetZoneLanes(rctx, tt, tenant, n)
		cancel()
		if err != nil {
			h.resizeErrs.Add(1)
			h.logger.Warn("soak: SetZoneLanes", "type", tt, "tenant", tenant, "lanes", n, "err", err)
			continue
		}
		h.resizes.Add(1)
	}
}

// requeuePass requeues the dead-lettered jobs built to be (KindRequeue)
// and notes the time of each requeue in h.requeues before it, so that their
// claims after it are told from those before (ClaimRec.Epoch). It reports
// whether it found any.
func (h *harness) requeuePass(ctx context.Context) bool {
	if h.cfg.RequeueShare <= 0 {
		return false
	}
	found := false
	for _, dbi := range h.workedDBs() {
		q, err := h.adminIn(ctx, dbi, false)
		if err != nil {
			continue
		}
		found = h.requeueIn(ctx, q) || found
	}
	return found
}

// requeueIn requeues the jobs built to be dead-lettered from q's dead
// letters (those of a tenant moved away since are requeued where they
// died, into the tenant's last zone there: a new zone, run there).
func (h *harness) requeueIn(ctx context.Context, q *quick.Queue) bool {
	found := false
	for _, tt := range h.workTypes() {
		dead, err := pages.Dead(ctx, q, tt)
		if err != nil {
			continue
		}
		for _, id := range dead {
			if h.kindOf(id) != KindRequeue {
				continue
			}
			found = true
			h.noteRequeue(id, time.Now())
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			if err := q.Requeue(rctx, id); err != nil && !errors.Is(err, quick.ErrNotFound) {
				h.logger.Warn("soak: requeue", "id", id, "err", err)
			}
			cancel()
		}
	}
	return found
}

// noteRequeue records that a requeue of job id begins at at (real time):
// before the Requeue call, so that every claim of the job it places comes
// after it.
func (h *harness) noteRequeue(id quick.ID, at time.Time) {
	h.requeueMu.Lock()
	defer h.requeueMu.Unlock()
	if h.requeues == nil {
		h.requeues = map[quick.ID][]time.Time{}
	}
	h.requeues[id] = append(h.requeues[id], at)
}

// epochAt is how many requeues of job id had begun at claimed (real time):
// the epoch of a lease claimed then. A claim of the job before a requeue
// took a key the requeue found dead-lettered, so it came before the
// requeue began; a claim of the key the requeue placed came after.
func (h *harness) epochAt(id quick.ID, claimed time.Time) int {
	h.requeueMu.Lock()
	defer h.requeueMu.Unlock()
	n := 0
	for _, at := range h.requeues[id] {
		if at.Before(claimed) {
			n++
		}
	}
	return n
}

func (h *harness) kindOf(id quick.ID) string {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return h.rec.kinds[id]
}

// requeueLoop runs requeue passes every second while ctx lasts.
func (h *harness) requeueLoop(ctx context.Context) {
	for sleep(ctx, time.Second) {
		h.requeuePass(ctx)
	}
}

// queued is one raw scan of every queued job (scheduled, ready or leased)
// of the given task types: every zone job key of every tenant, in every
// place the mover ever put it, in every database. It reads the keys rather
// than List, so that it sees a job stored twice as two, and sees every zone
// whatever the inspection API covers. fp hashes the keys and values, which
// change with every move, claim, attempt and finish.
func (h *harness) queued(ctx context.Context, types []string) (ids map[string][]quick.ID, fp uint64, err error) {
	ids = map[string][]quick.ID{}
	hash := fnv.New64a()
	for dbi := range numDBs {
		if h.dbAt(dbi) == nil {
			continue
		}
		var ranges []kv.KeyRange
		var owner []string
		for _, tt := range types {
			for _, t := range h.tenants() {
				for _, place := range h.routes.placesIn(h, dbi, t) {
					b, e := place.Sub(tt, int64(0)).Range()
					ranges = append(ranges, kv.KeyRange{Begin: b, End: e})
					owner = append(owner, tt)
				}
			}
		}
		if err := h.queuedIn(ctx, h.dbAt(dbi), ranges, owner, ids, hash); err != nil {
			return nil, 0, err
		}
	}
	return ids, hash.Sum64(), nil
}

// queuedIn adds the job keys in ranges of db to ids and hash.
func (h *harness) queuedIn(ctx context.Context, db kv.Database, ranges []kv.KeyRange, owner []string, ids map[string][]quick.ID, hash hash.Hash64) error {
	type found struct {
		tt string
		id quick.ID
		kv kv.KeyValue
	}
	var got []found
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		got = got[:0]
		futs := make([]kv.RangeResult, len(ranges))
		for i, r := range ranges {
			futs[i] = tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: 1000})
		}
		for i, r := range ranges {
			for {
				kvs, err := futs[i].GetSliceWithError()
				if err != nil {
					return err
				}
				for _, p := range kvs {
					t, err := tuple.Unpack(p.Key)
					if err != nil || len(t) == 0 {
						return fmt.Errorf("soak: queued key %x does not unpack: %v", p.Key, err)
					}
					id, ok := t[len(t)-1].(tuple.UUID)
					if !ok {
						return fmt.Errorf("soak: queued key %x does not end in an ID", p.Key)
					}
					got = append(got, found{owner[i], quick.ID(id), p})
				}
				if len(kvs) < 1000 {
					break
				}
				next := kv.KeyRange{Begin: append(append([]byte{}, kvs[len(kvs)-1].Key...), 0), End: r.End}
				futs[i] = tr.Snapshot().GetRange(next, kv.RangeOptions{Limit: 1000})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range got {
		ids[f.tt] = append(ids[f.tt], f.id)
		hash.Write(f.kv.Key)
		hash.Write(f.kv.Value)
	}
	return nil
}

// indexLeft lists the jobs whose lookup index entries S (2, "i", id) are
// left at the end (every type but the short one keeps its index): every job is finished then (but the cron chains' pending
// occurrences), and each finish must have cleared its entry.
// Every database of the run is read: a moved job's entry goes with it.
func (h *harness) indexLeft(ctx context.Context) ([]quick.ID, error) {
	var all []quick.ID
	for dbi := range numDBs {
		if db := h.dbAt(dbi); db != nil {
			ids, err := h.indexLeftIn(ctx, db)
			if err != nil {
				return nil, err
			}
			all = append(all, ids...)
		}
	}
	return all, nil
}

func (h *harness) indexLeftIn(ctx context.Context, db kv.Database) ([]quick.ID, error) {
	idx := h.space.Sub(int64(2), "i")
	b, e := idx.Range()
	var out []quick.ID
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: 10_000}).GetSliceWithError()
		for _, p := range kvs {
			t, err := idx.Unpack(p.Key)
			if err != nil || len(t) == 0 {
				return fmt.Errorf("soak: lookup index key %x does not unpack: %v", p.Key, err)
			}
			id, _ := t[0].(tuple.UUID)
			out = append(out, quick.ID(id))
		}
		return err
	})
	return out, err
}

// counters of the zones part, kept in the harness.
type zoneCounters struct {
	resizes, resizeErrs atomic.Int64
	requeueMu           sync.Mutex
	requeues            map[quick.ID][]time.Time // when each requeue of a job began
	adm                 admins
}
