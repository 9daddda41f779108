package bench

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// zonesStrategy is the zones layout (schema 2, docs/design.md "Two
// levels"): each job goes to its (item space, task type) zone, and every
// worker claims through quick.Consumer.Claim, which leases a lane from the task
// type's pointer index (a random start in the oldest vested second, pick
// one vested at random) and takes up to Max = free slots of its vested jobs
// with per-job leases. No membership, no assignment: every worker runs the
// same claim. Acks are batched through quick.Ack.
//
// A claimer keeps its lane as the worker runtime does (worker/claim.go):
// with ClaimOptions.Keep, for up to zoneKeepRounds claims in a row while
// the lane has vested jobs, the last of them handing it back. A kept lane's
// pointer is leased, so other claimers pick other lanes: with as many lanes
// as claimers, each works its own, and a claimer
// does not go back to the index (and race the others for a pointer) at
// every claim.
//
// "zones" opens the queue with the default options (a zone starts with one
// lane and grows when a claim finds it backlogged); "zones-16" gives every
// zone 16 lanes from the start (Options.ZoneLanes).
type zonesStrategy struct {
	zoneLanes int  // Options.ZoneLanes; 0 keeps the default
	keep      bool // keep the lane as the worker runtime does
}

// zoneKeepRounds is worker/claim.go's keepRounds: how many claims in a row
// a claimer makes on one lane before handing it back.
const zoneKeepRounds = 8

func (zonesStrategy) perSlot() bool   { return false }
func (zonesStrategy) batchAcks() bool { return true }
func (s zonesStrategy) queueOptions(o *quick.Options) {
	if s.zoneLanes > 0 {
		o.ZoneLanes, o.MaxZoneLanes = s.zoneLanes, max(s.zoneLanes, o.MaxZoneLanes)
	}
}

func (s zonesStrategy) newClaimer(e *env, id string, _ []string) claimer {
	return &zonesClaimer{e: e, id: id, keep: s.keep}
}

// zonesClaimer claims with quick.Consumer.Claim and acks in batches with
// quick.Ack. One claim loop uses it (run.claimLoop), so its lane needs no
// lock.
type zonesClaimer struct {
	e      *env
	id     string
	keep   bool
	ptr    *quick.LaneLease // the lane kept for the next claim, or nil
	rounds int              // claims in a row on ptr
}

func (c *zonesClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	opts := quick.ClaimOptions{
		TaskType: c.e.taskType, Holder: c.id, Max: max, Lease: c.e.cfg.Lease,
		Keep: c.keep,
		Lane: c.ptr,
	}
	continuing := c.ptr != nil
	if continuing && c.rounds >= zoneKeepRounds-1 {
		opts.Keep = false // its last round: the claim hands the lane back
	}
	res, err := c.e.qClaim.Consumer().Claim(ctx, opts)
	if err != nil {
		if continuing && quick.IsLaneLost(err) {
			c.ptr, c.rounds = nil, 0 // taken over: look for another lane
			return nil, time.Time{}, nil
		}
		return nil, time.Time{}, err
	}
	c.ptr = res.Lane
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
	if err := c.e.qClaim.Consumer().ReleaseLane(ctx, p); err != nil && !quick.IsLaneLost(err) && ctx.Err() == nil {
		c.e.violate("bench: zones claimer could not hand its lane back: " + err.Error())
	}
}

func (c *zonesClaimer) ack(ctx context.Context, reqs []ackReq) (int, error) {
	acks := make([]quick.Ack, len(reqs))
	for i, r := range reqs {
		acks[i] = quick.Ack{Lease: r.j.lease, Kind: quick.AckComplete}
		if r.fail {
			acks[i] = quick.Ack{Lease: r.j.lease, Kind: quick.AckFail, Error: "injected failure", Delay: c.e.cfg.RetryDelay}
		}
	}
	res, err := c.e.qAck.Ack(ctx, acks...)
	if len(res) < len(acks) { // a failed transaction; lost leases come with every result
		return 0, err
	}
	lost := 0
	for _, r := range res {
		if r.Err != nil {
			lost++
		}
	}
	return lost, nil
}
