package bench

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
)

// lanesStrategy is this project's claim: each worker claims from the lanes
// rendezvous hashing gives it among all the workers (lanes.Assign, one
// replica, the default), as many jobs as it has free slots, and acks
// batches. Membership is static in a benchmark run, so Assign is computed
// once rather than through heartbeats (a lanes.Tracker reaches the same
// assignment once the members have beaten twice).
type lanesStrategy struct{}

func (lanesStrategy) queueLanes(cfg Config) int { return cfg.Lanes }
func (lanesStrategy) perSlot() bool             { return false }
func (lanesStrategy) batchAcks() bool           { return true }

func (lanesStrategy) newClaimer(e *env, id string, members []string) claimer {
	return &lanesClaimer{e: e, id: id, lanes: lanes.Assign(e.qClaim.Lanes(), members, id, 1)}
}

type lanesClaimer struct {
	e     *env
	id    string
	lanes []int
}

func (c *lanesClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	res, err := c.e.qClaim.Claim(ctx, quick.ClaimOptions{
		TaskType: c.e.taskType, Holder: c.id, Lanes: c.lanes, Max: max, Lease: c.e.cfg.Lease,
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

func (c *lanesClaimer) ack(ctx context.Context, reqs []ackReq) (int, error) {
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
