package quick

import (
	"time"

	"pgregory.net/rapid"
)

// Tenant limits in the zones state machine (issue 24): the "limits" step
// sets, changes or clears a tenant's concurrency limit (1 or 5) or rate
// while jobs are leased, lapse and are acked, and every claim is checked
// against the limits in force:
//
//   - concurrency: after a claim that took jobs of a tenant limited to L,
//     the tenant's jobs leased under a limit whose leases have not lapsed
//     (each holds a slot until its deadline; the model knows every
//     deadline) number at most L. A claim takes jobs only while fewer than
//     L slots are held, so this holds whatever the holders do meanwhile;
//     the one way past L, a renewal that takes back a slot a claim freed
//     after its lease lapsed, makes the next claim take nothing.
//   - rate R with burst B: from any start since the rate was set, the
//     starts up to now number at most B + R·(now − that start). A start
//     happened at the claim's time, somewhere between the clock before the
//     claim and after it (a slow commit moves the clock 4.5 s within the
//     claim): the check takes each start at the earliest and now at the
//     latest.
//
// A limited lane parks: its pointer moves up to 5 s ahead (quick's
// parkHorizon) and its state is marked Parked, which the pointer invariant
// allows.

// zsmLimitChoices are what the limits step sets.
var zsmLimitChoices = []Limits{
	{Concurrency: 1},
	{Concurrency: 5},
	{Rate: 0.5, Burst: 2},
	{Concurrency: 1, Rate: 2, Burst: 3},
	{}, // cleared
}

// zmLimits is the model's view of one tenant's limits.
type zmLimits struct {
	l Limits
	// starts are the claims' start times since the rate was set: the
	// clock before each claim.
	starts []time.Time
}

// setLimits sets or clears a tenant's limits.
func (m *zModel) setLimits(rt *rapid.T) {
	tenant := rapid.SampledFrom(zsmTenants).Draw(rt, "tenant")
	l := rapid.SampledFrom(zsmLimitChoices).Draw(rt, "limits")
	var err error
	if l.IsZero() {
		err = m.q.ClearTenantLimits(m.ctx, zsmType, tenant)
	} else {
		err = m.q.SetTenantLimits(m.ctx, zsmType, tenant, l)
	}
	if err != nil {
		rt.Fatalf("set the limits of %q to %+v: %v", tenant, l, err)
	}
	if m.limits == nil {
		m.limits = map[string]*zmLimits{}
	}
	m.limits[tenant] = &zmLimits{l: l}
	m.limitSets++
}

// checkLimits checks a claim that took jobs against its tenant's limits;
// took has applied it to the model.
func (m *zModel) checkLimits(rt *rapid.T, res Claimed, now time.Time) {
	if len(res.Jobs) == 0 {
		return
	}
	tenant := res.Jobs[0].ItemSpace
	lim := m.limits[tenant]
	if lim == nil {
		return
	}
	if c := lim.l.Concurrency; c > 0 {
		held := 0
		for _, id := range m.order {
			j := m.jobs[id]
			if j.tenant == tenant && j.state == zmPending && j.leased && j.slot && j.vestAt.After(now) {
				held++
			}
		}
		m.maxLeased[c] = max(m.maxLeased[c], held)
		if held > c {
			rt.Fatalf("tenant %.8q: a claim of %d jobs left %d leased under a concurrency limit of %d", tenant, len(res.Jobs), held, c)
		}
	}
	if r := lim.l.Rate; r > 0 {
		from := now
		if !m.claimFrom.IsZero() && m.claimFrom.Before(now) {
			from = m.claimFrom
		}
		for range res.Jobs {
			lim.starts = append(lim.starts, from)
		}
		b := lim.l.burst()
		for i, s := range lim.starts {
			n := len(lim.starts) - i
			if allowed := float64(b) + r*now.Sub(s).Seconds(); float64(n) > allowed+1e-9 {
				rt.Fatalf("tenant %.8q: %d starts in %v under a rate of %v/s with a burst of %d", tenant, n, now.Sub(s), r, b)
			}
		}
	}
}

// slotted says whether a job of tenant claimed now holds a slot: its
// tenant has a concurrency limit.
func (m *zModel) slotted(tenant string) bool {
	l := m.limits[tenant]
	return l != nil && l.l.Concurrency > 0
}

// clearLimits lifts every limit before the drain, which claims with the
// unfaulted handle and must not wait on them.
func (m *zModel) clearLimits(rt *rapid.T) {
	for tenant := range m.limits {
		if err := m.truth.ClearTenantLimits(m.ctx, zsmType, tenant); err != nil {
			rt.Fatalf("clear the limits of %q: %v", tenant, err)
		}
	}
}
