package bench

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// randomK is QuiCK's claim as described in the paper and implemented by its
// followers: peek at the first K vested jobs of the task type with a
// snapshot read (no lanes: one range ordered by vesting time, so the queue
// is opened with one lane), pick at random as many as there are free slots,
// and lease them in one transaction with a read-conflict key on each. Two
// workers conflict only when their random picks overlap. The coin has no
// memory: a job can lose the draw round after round while younger jobs win
// it, which is the "chronically unlucky job" the fairness run looks for.
// Finished jobs are deleted one transaction each, as QuiCK deletes an item
// when its work is done.
type randomK struct{}

func (randomK) queueLanes(Config) int { return 1 }
func (randomK) perSlot() bool         { return false }
func (randomK) batchAcks() bool       { return false }

func (randomK) newClaimer(e *env, id string, _ []string) claimer {
	return &randomKClaimer{recipeClaimer: recipeClaimer{e: e, id: id, m: e.mirror()}}
}

type randomKClaimer struct {
	recipeClaimer // shares the lease-form ack
}

func (c *randomKClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	var (
		out  []job
		next int64
	)
	err := c.e.claimDB.Transact(ctx, func(tr kv.Transaction) error {
		out, next = nil, 0
		now := time.Now()
		kvs, err := tr.Snapshot().GetRange(c.m.l.laneRange(c.e.taskType, 0, normalPrio), kv.RangeOptions{Limit: c.e.cfg.K}).GetSliceWithError()
		if err != nil {
			return err
		}
		cands, nv := c.m.vested(kvs, now.UnixMilli())
		next = nv
		rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		if len(cands) > max {
			cands = cands[:max]
		}
		if len(cands) == 0 {
			return nil
		}
		ls, err := c.m.leaseTx(tr, cands, c.id, now)
		if err != nil {
			return err
		}
		for _, l := range ls {
			out = append(out, job{id: l.sk.ID, attempt: int(l.sv.Attempt), ml: l})
		}
		return nil
	})
	var nt time.Time
	if next != 0 {
		nt = time.UnixMilli(next)
	}
	return out, nt, err
}
