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
	// Lanes were the schema-1 lanes' counts; quick.Depth counts zones and
	// tenants, so this stays empty until the lanes page shows a zone's
	// lanes (quick.Queue.ZoneInfo).
	Lanes []laneCount
	// Tenants are the busiest tenants (quick.Depth).
	Tenants []quick.TenantDepth
}

// laneCount is one lane's counts on the lanes page.
type laneCount struct {
	Lane, Ready, Leased, Scheduled int
	Exact                          bool
	OldestReady                    time.Time
}

// typeCounts reads a task type's counts: quick.Queue.Depth (at most
// 10 × Budget keys read, in two round trips, and the dead-letter counter).
func (h *Handler) typeCounts(ctx context.Context, t string) (typeCounts, error) {
	d, err := h.q.Depth(ctx, quick.DepthOptions{TaskType: t, Budget: 10 * h.cfg.Budget})
	if err != nil {
		return typeCounts{}, err
	}
	return typeCounts{
		TaskType: t, At: h.now(), Ready: d.Ready, Leased: d.Leased, Scheduled: d.Scheduled, Dead: d.Dead,
		Exact: d.Exact, OldestReady: d.OldestReady, Tenants: d.Tenants,
	}, nil
}
