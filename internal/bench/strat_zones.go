package bench

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// zonesStrategy is the zones layout (schema 2, docs/design.md "Two
// levels"): each job goes to its (item space, task type) zone, and every
// worker claims through quick.ClaimZone, which leases a lane from the task
// type's pointer index (a random start in the oldest vested second, pick
// one vested at random) and takes up to Max = free slots of its vested jobs
// with per-job leases. No membership, no assignment: every worker runs the
// same claim. Acks are batched through quick.Ack, as for lanes.
//
// A claimer keeps its lane as the worker runtime does (worker/zones.go):
// with ZoneClaimOptions.Keep, for up to zoneKeepRounds claims in a row while
// the lane has vested jobs, the last of them handing it back. A kept lane's
// pointer is leased, so other claimers pick other lanes: with as many lanes
// as claimers, each works its own, as in the lanes layout, and a claimer
// does not go back to the index (and race the others for a pointer) at
// every claim.
//
// "zones" opens the queue with the default options (a zone starts with one
// lane and grows when a claim finds it backlogged); "zones-16" gives every
// zone 16 lanes from the start (Options.ZoneLanes), as the lanes variant
// has 16.
type zonesStrategy struct {
	zoneLanes int  // Options.ZoneLanes; 0 keeps the default
	keep      bool // keep the lane as the worker runtime does
}

// zoneKeepRounds is worker/zones.go's keepRounds: how many claims in a row
// a claimer makes on one lane before handing it back.
const zoneKeepRounds = 8

func (zonesStrategy) queueLanes(cfg Config) int { return cfg.Lanes }
func (zonesStrategy) perSlot() bool             { return false }
func (zonesStrategy) batchAcks() bool           { return true }
func (s zonesStrategy) queueOptions(o *quick.Options) {
	o.Layout = quick.LayoutZones
	if s.zoneLanes > 0 {
		o.ZoneLanes, o.MaxZoneLanes = s.zoneLanes, max(s.zoneLanes, o.MaxZoneLanes)
	}
}

func (s zonesStrategy) newClaimer(e *env, id string, _ []string) claimer {
	return &zonesClaimer{lanesClaimer: lanesClaimer{e: e, id: id}, keep: s.keep}
}

// zonesClaimer shares lanes' batched ack: quick.Ack routes a zones lease.
// One claim loop uses it (run.claimLoop), so its lane needs no lock.
type zonesClaimer struct {
	lanesClaimer
	keep   bool
	ptr    *quick.PointerLease // the lane kept for the next claim, or nil
	rounds int                 // claims in a row on ptr
}

func (c *zonesClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	opts := quick.ZoneClaimOptions{
		ClaimOptions: quick.ClaimOptions{TaskType: c.e.taskType, Holder: c.id, Max: max, Lease: c.e.cfg.Lease},
		Keep:         c.keep,
		Pointer:      c.ptr,
	}
	continuing := c.ptr != nil
	if continuing && c.rounds >= zoneKeepRounds-1 {
		opts.Keep = false // its last round: the claim hands the lane back
	}
	res, err := c.e.qClaim.ClaimZone(ctx, opts)
	if err != nil {
		if continuing && quick.IsPointerLost(err) {
			c.ptr, c.rounds = nil, 0 // taken over: look for another lane
			return nil, time.Time{}, nil
		}
		return nil, time.Time{}, err
	}
	c.ptr = res.Pointer
	switch {
	case len(res.Jobs) > 0 && continuing:
		c.rounds++
	case len(res.Jobs) > 0:
		c.rounds = 0
	case c.ptr != nil:
		// A kept lane with nothing vested (its pointer vested for a key
		// moved later since): hand it back, and look again at once.
		c.letGo(ctx)
		return c.claim(ctx, max)
	}
	if c.ptr == nil {
		c.rounds = 0
	}
	out := make([]job, len(res.Jobs))
	for i, l := range res.Jobs {
		out[i] = job{id: l.ID, attempt: l.Attempt, lease: l}
	}
	return out, res.NextVest, nil
}

// letGo hands the kept lane back to the index.
func (c *zonesClaimer) letGo(ctx context.Context) {
	if c.ptr == nil {
		return
	}
	p := *c.ptr
	c.ptr, c.rounds = nil, 0
	if err := c.e.qClaim.ReleasePointer(ctx, p); err != nil && !quick.IsPointerLost(err) && ctx.Err() == nil {
		c.e.violate("bench: zones claimer could not hand its lane back: " + err.Error())
	}
}
