package bench

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// zonesStrategy is the zones layout (schema 2, docs/design.md "Two
// levels"): each job goes to its (item space, task type) zone, and every
// worker claims through quick.ClaimZone, which leases a lane from the task
// type's pointer index (peek K, pick one vested at random), takes up to
// Max = free slots of its vested jobs with per-job leases and hands the lane
// back in the same transaction. No membership, no assignment: every worker
// runs the same claim. Acks are batched through quick.Ack, as for lanes.
//
// "zones" opens the queue with the default options (a zone starts with one
// lane and grows when a claim finds it backlogged); "zones-16" gives every
// zone 16 lanes from the start (Options.ZoneLanes), as the lanes variant
// has 16.
type zonesStrategy struct {
	zoneLanes int // Options.ZoneLanes; 0 keeps the default
}

func (zonesStrategy) queueLanes(cfg Config) int { return cfg.Lanes }
func (zonesStrategy) perSlot() bool             { return false }
func (zonesStrategy) batchAcks() bool           { return true }
func (s zonesStrategy) queueOptions(o *quick.Options) {
	o.Layout = quick.LayoutZones
	if s.zoneLanes > 0 {
		o.ZoneLanes, o.MaxZoneLanes = s.zoneLanes, max(s.zoneLanes, o.MaxZoneLanes)
	}
}

func (zonesStrategy) newClaimer(e *env, id string, _ []string) claimer {
	return &zonesClaimer{lanesClaimer: lanesClaimer{e: e, id: id}}
}

// zonesClaimer shares lanes' batched ack: quick.Ack routes a zones lease.
type zonesClaimer struct {
	lanesClaimer
}

func (c *zonesClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	res, err := c.e.qClaim.ClaimZone(ctx, quick.ZoneClaimOptions{
		ClaimOptions: quick.ClaimOptions{TaskType: c.e.taskType, Holder: c.id, Max: max, Lease: c.e.cfg.Lease},
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	out := make([]job, len(res.Jobs))
	for i, l := range res.Jobs {
		out[i] = job{id: l.ID, attempt: l.Attempt, lease: l}
	}
	return out, res.NextVest, nil
}
