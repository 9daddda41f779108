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
	// Exact is false when the count hit the budget: counts are lower
	// bounds.
	Exact       bool
	OldestReady time.Time
	// Tenants are the tenants with the most ready work, most first.
	Tenants      []quick.TenantDepth
	TenantsExact bool
}

// typeCounts reads a task type's counts across its tenants' zones, with
// its top tenants: quick.Queue.Depth (at most Budget keys, and one point
// read of the dead letters' counter).
func (h *Handler) typeCounts(ctx context.Context, t string, top int) (typeCounts, error) {
	d, err := h.q.Depth(ctx, quick.DepthOptions{TaskType: t, Budget: h.cfg.Budget, TopTenants: top})
	if err != nil {
		return typeCounts{}, err
	}
	return typeCounts{TaskType: t, At: h.now(), Ready: d.Ready, Leased: d.Leased, Scheduled: d.Scheduled, Dead: d.Dead,
		Exact: d.Exact, OldestReady: d.OldestReady, Tenants: d.Tenants, TenantsExact: d.TenantsExact}, nil
}
