package bench

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// recipe is FoundationDB's documented queue (queues.rst in FoundationDB's
// documentation): items in one ordered range, and a dequeue that reads the
// first item with a serializable range read of limit 1 and removes it. Every
// consumer reaches for the same key, so concurrent dequeues conflict; the
// documentation's own remedy for that (staged dequeue requests) is an
// extension it does not implement, and neither do we.
//
// The queue is opened with one lane, so quick's layout is exactly that one
// range ordered by vesting time, with the job ID as the recipe's random
// suffix. In the delete form a dequeued job is gone: a consumer that dies,
// or whose handler fails, loses it, so a failed job is enqueued again as a
// new job, which is what an application on the recipe has to do. In the
// lease form the head job is leased as quickfdb leases (moved to now +
// lease with a token) and completed afterwards.
type recipe struct{ deleteOnDequeue bool }

func (recipe) queueLanes(Config) int { return 1 }
func (recipe) perSlot() bool         { return true }
func (recipe) batchAcks() bool       { return false }

func (r recipe) newClaimer(e *env, id string, _ []string) claimer {
	return &recipeClaimer{e: e, id: id, del: r.deleteOnDequeue, m: e.mirror()}
}

type recipeClaimer struct {
	e   *env
	id  string
	del bool
	m   mirror
}

func (c *recipeClaimer) claim(ctx context.Context, _ int) ([]job, time.Time, error) {
	var (
		out  []job
		next int64
	)
	err := c.e.claimDB.Transact(ctx, func(tr kv.Transaction) error {
		out, next = nil, 0
		now := time.Now()
		// Serializable, as the recipe's first_item: this read is what makes
		// two consumers of the same head conflict.
		kvs, err := tr.GetRange(c.m.l.laneRange(c.e.taskType, 0, normalPrio), kv.RangeOptions{Limit: 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		cands, nv := c.m.vested(kvs, now.UnixMilli())
		next = nv
		if len(cands) == 0 {
			return nil
		}
		if c.del {
			if err := c.m.deleteTx(tr, cands[0]); err != nil {
				return err
			}
			out = []job{{id: cands[0].sk.ID, attempt: int(cands[0].sv.Attempt) + 1}}
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

func (c *recipeClaimer) ack(ctx context.Context, reqs []ackReq) (int, error) {
	lost := 0
	for _, r := range reqs {
		if c.del {
			// Dequeue already deleted the job. A failed one is enqueued
			// anew, by the consumer, after the retry delay.
			if r.fail {
				if err := c.e.reenqueue(ctx, r.j.id); err != nil {
					return lost, err
				}
			}
			continue
		}
		var (
			l   bool
			err error
		)
		if r.fail {
			l, err = c.m.fail(ctx, c.e.ackDB, r.j.ml, time.Now(), c.e.cfg.RetryDelay, "injected failure")
		} else {
			l, err = c.m.complete(ctx, c.e.ackDB, r.j.ml)
		}
		if err != nil {
			return lost, err
		}
		if l {
			lost++
		}
	}
	return lost, nil
}
