package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// scanStrategy is the worker runtime's claim path (worker/scanner.go): the
// run's claimers are grouped into processes of scanGroup claimers (the
// runtime's claimers per task type), and in each process one claimer, the
// scanner, alone reads the pointer index: its claims (ClaimOptions.Scan)
// also return other vested lanes, one per zone, which it hands to the
// process's claimers that wait for work (and the lane it keeps, when one
// waits); those claim the lanes with ClaimOptions.From and keep them as
// zones-keep does. "zones-scan" runs workers/4 processes of 4 claimers
// (a run of 4 workers is one process); "zones-scan-1" one process of every
// claimer. Compare with zones-keep, where every claimer reads the index.
type scanStrategy struct {
	group int // claimers per process; 0: all in one
	// rotate: the scanner keeps a lane only to hand it to a waiting
	// claimer, and so reads the index on every claim of its own
	// ("zones-scan-rotate", docs/design.md "Zone turns": an alternative
	// weighed, not the worker's policy).
	rotate bool

	mu    sync.Mutex
	feeds map[*env]map[int]*benchFeed
}

const scanGroup = 4

func (*scanStrategy) perSlot() bool   { return false }
func (*scanStrategy) batchAcks() bool { return true }

// benchFeed is one process's hand-over from its scanner to its claimers.
type benchFeed struct {
	ch      chan scanItem
	waiting atomic.Int32
}

type scanItem struct {
	cand   *quick.LaneCandidate
	ptr    *quick.LaneLease
	rounds int
}

func (s *scanStrategy) newClaimer(e *env, id string, members []string) claimer {
	i := 0
	for k, m := range members {
		if m == id {
			i = k
		}
	}
	g, k := 0, i
	if s.group > 0 {
		g, k = i/s.group, i%s.group
	}
	s.mu.Lock()
	if s.feeds == nil {
		s.feeds = map[*env]map[int]*benchFeed{}
	}
	if s.feeds[e] == nil {
		s.feeds[e] = map[int]*benchFeed{}
	}
	f := s.feeds[e][g]
	if f == nil {
		f = &benchFeed{ch: make(chan scanItem)}
		s.feeds[e][g] = f
	}
	s.mu.Unlock()
	return &scanClaimer{zonesClaimer: zonesClaimer{e: e, id: id, keep: true}, feed: f, scanner: k == 0, rotate: s.rotate}
}

// scanClaimer is one claimer of a process: its scanner or an executor.
type scanClaimer struct {
	zonesClaimer
	feed    *benchFeed
	scanner bool
	rotate  bool
}

func (c *scanClaimer) claim(ctx context.Context, max int) ([]job, time.Time, error) {
	opts := quick.ClaimOptions{
		TaskType: c.e.taskType, Holder: c.id, Max: max, Lease: c.e.cfg.Lease,
		Keep: true, Lane: c.ptr,
	}
	if c.ptr == nil {
		if c.scanner {
			// A candidate per waiting claimer, and at least one: the
			// scanner's every claim from the index is a scan, which takes
			// the zone whose turn it is (quick/scan.go), as the worker's
			// scanner does (worker/scanner.go, scanWidth).
			opts.Scan = 1
			w := int(c.feed.waiting.Load())
			if w > 1 {
				opts.Scan = min(w, scanGroup*4)
			}
			if c.rotate && w == 0 {
				opts.Keep = false
			}
		} else {
			// An executor with no lane waits for its scanner.
			c.feed.waiting.Add(1)
			select {
			case it := <-c.feed.ch:
				c.feed.waiting.Add(-1)
				if it.ptr != nil {
					c.ptr, c.rounds = it.ptr, it.rounds
					opts.Lane = c.ptr
				} else {
					opts.From = it.cand
				}
			case <-ctx.Done():
				c.feed.waiting.Add(-1)
				return nil, time.Time{}, nil
			}
		}
	}
	continuing := c.ptr != nil
	if continuing && c.rounds >= zoneKeepRounds-1 {
		opts.Keep = false
	}
	res, err := c.e.qClaim.Consumer().Claim(ctx, opts)
	if err != nil {
		if continuing && quick.IsLaneLost(err) {
			c.ptr, c.rounds = nil, 0
			return nil, time.Time{}, nil
		}
		return nil, time.Time{}, err
	}
	if res.Missed {
		// Taken by another process since the scan: wait for the next one.
		return nil, time.Now(), nil
	}
	c.ptr = res.Lane
	switch {
	case len(res.Jobs) > 0 && continuing:
		c.rounds++
	case len(res.Jobs) > 0:
		c.rounds = 0
	case c.ptr != nil:
		c.letGo(ctx)
	}
	if c.ptr == nil {
		c.rounds = 0
	}
	if c.scanner && c.feed.waiting.Load() > 0 {
		if c.ptr != nil && c.offer(scanItem{ptr: c.ptr, rounds: c.rounds}) {
			c.ptr, c.rounds = nil, 0
		}
		for i := range res.Candidates {
			if !c.offer(scanItem{cand: &res.Candidates[i]}) {
				break
			}
		}
	}
	out := make([]job, len(res.Jobs))
	for i, l := range res.Jobs {
		out[i] = job{id: l.ID, attempt: l.Attempt, lease: l}
	}
	next := res.NextVest
	if !c.scanner && len(out) == 0 {
		next = time.Now() // back to waiting for the scanner at once
	}
	return out, next, nil
}

func (c *scanClaimer) offer(it scanItem) bool {
	select {
	case c.feed.ch <- it:
		return true
	default:
		return false
	}
}
