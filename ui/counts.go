package ui

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// typeCounts is one task type's counts, as the overview shows them.
type typeCounts struct {
	TaskType                 string
	At                       time.Time
	Ready, Leased, Scheduled int
	Dead                     int64
	// Exact is false when a lane scan hit the budget: counts are lower
	// bounds.
	Exact       bool
	OldestReady time.Time
	Lanes       []quick.LaneStats
}

// typeCounts reads a task type's counts: quick.Queue.LaneCounts (one range
// read per lane and priority, at most Budget keys each, all in flight) and
// DeadCount (one point read of an atomic counter).
func (h *Handler) typeCounts(ctx context.Context, t string) (typeCounts, error) {
	ls, err := h.q.LaneCounts(ctx, quick.LaneCountsOptions{TaskType: t, PerRange: h.cfg.Budget})
	if err != nil {
		return typeCounts{}, err
	}
	dead, err := h.q.DeadCount(ctx, t)
	if err != nil {
		return typeCounts{}, err
	}
	c := typeCounts{TaskType: t, At: h.now(), Dead: dead, Exact: true, Lanes: ls}
	for _, l := range ls {
		c.Ready += l.Ready
		c.Leased += l.Leased
		c.Scheduled += l.Scheduled
		c.Exact = c.Exact && l.Exact
		if !l.OldestReady.IsZero() && (c.OldestReady.IsZero() || l.OldestReady.Before(c.OldestReady)) {
			c.OldestReady = l.OldestReady
		}
	}
	return c, nil
}
