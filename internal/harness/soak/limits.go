package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Tenant limits in the soak (issue 24). With Config.Limits, tenant t01
// gets a concurrency limit of 1 and t02 one of 5 on every work type, and
// t05 a rate; they are set before any worker starts and swapped (t01 5 and
// t02 1, another rate) every LimitEvery while workers run, killed and
// frozen, with skewed clocks. Half the producers' batches go to these
// tenants, so that a limit of 5 meets 5 vested jobs at once.
//
// The checker (checkLimits) takes every handler run of a limited tenant,
// from its start to its return (real time: every worker of the soak runs in
// one process, and their skewed clocks are real time plus an offset), and
// finds the most that ran at once. A run counts against the limit in force
// when its lease was claimed (both limits while a change may not have
// reached every process: limitSlack). A job leased under the limit holds a
// slot for exactly as long as its lease, so at most L run at once, but for
// one exception the design allows: a holder frozen past its lease (or
// killed) still runs its handlers when the slot has gone to another claim.
// A run stops counting when its worker freezes or is killed, and the runs
// so cut are counted and reported ("lapsed while frozen or killed").

// limitSlack is how long after a change of limits a claim may still obey
// the old ones: a process reads the limits again once a second
// (quick's limitsRefresh), in a claim transaction that may take a while
// under the injected faults.
const limitSlack = 3 * time.Second

// limitedTenants are the tenants the soak limits: concurrency on the first
// two, a rate on the third.
func (h *harness) limitedTenants() []string {
	return []string{h.tenantName(1), h.tenantName(2), h.tenantName(5)}
}

// limitTypes are the task types the limits are set on.
func (h *harness) limitTypes() []string {
	if h.cfg.ShortShare > 0 {
		return []string{workType, shortType}
	}
	return []string{workType}
}

// limitPhase is the limits of phase n (0, 1, 0, ...).
func (h *harness) limitPhase(n int) []LimitChange {
	ts := h.limitedTenants()
	if n%2 == 0 {
		return []LimitChange{{Tenant: ts[0], Concurrency: 1}, {Tenant: ts[1], Concurrency: 5}, {Tenant: ts[2], Rate: 4, Burst: 2}}
	}
	return []LimitChange{{Tenant: ts[0], Concurrency: 5}, {Tenant: ts[1], Concurrency: 1}, {Tenant: ts[2], Rate: 8, Burst: 4}}
}

// setLimits sets phase n's limits and records each change.
func (h *harness) setLimits(ctx context.Context, n int) {
	q, err := h.admin(ctx, false)
	if err != nil {
		return
	}
	for _, c := range h.limitPhase(n) {
		c.From = time.Now()
		failed := false
		for _, tt := range h.limitTypes() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			err := q.SetTenantLimits(sctx, tt, c.Tenant, quick.Limits{Concurrency: c.Concurrency, Rate: c.Rate, Burst: c.Burst})
			cancel()
			if err != nil {
				failed = true
				h.logger.Warn("soak: SetTenantLimits", "type", tt, "err", err)
			}
		}
		c.To = time.Now()
		if failed {
			// Unknown which limits hold: the checker allows either
			// until the next change.
			c.To = time.Time{}
		}
		h.rec.limit(c)
		h.limitChanges.Add(1)
	}
}

// limitLoop swaps the limits every LimitEvery while ctx lasts.
func (h *harness) limitLoop(ctx context.Context) {
	for n := 1; sleep(ctx, h.cfg.LimitEvery); n++ {
		h.setLimits(ctx, n)
	}
}

// limitAt is the concurrency limit and rate (with burst) a claim of tenant
// made at t obeyed, the larger of two when a change may not have reached
// it: 0 for none.
func limitAt(changes []LimitChange, tenant string, t time.Time) (conc int, rate float64, burst int, settled bool) {
	var prev, cur *LimitChange
	for i := range changes {
		c := &changes[i]
		if c.Tenant != tenant || c.From.After(t) {
			continue
		}
		prev, cur = cur, c
	}
	if cur == nil {
		return 0, 0, 0, true
	}
	conc, rate, burst = cur.Concurrency, cur.Rate, cur.Burst
	if prev != nil && (cur.To.IsZero() || t.Before(cur.To.Add(limitSlack))) {
		conc, rate, burst = max(conc, prev.Concurrency), max(rate, prev.Rate), max(burst, prev.Burst)
		return conc, rate, burst, false
	}
	return conc, rate, burst, true
}

// checkLimits finds the most runs of each limited tenant and task type at
// once (see the file comment) and checks the rate.
func checkLimits(h History, v *Verdict) {
	if len(h.Limits) == 0 {
		return
	}
	job := map[quick.ID]JobRec{}
	for _, j := range h.Jobs {
		job[j.ID] = j
	}
	freezes := map[string][]Freeze{}
	for _, f := range h.Freezes {
		freezes[f.Worker] = append(freezes[f.Worker], f)
	}
	cancelled := map[quick.ID]time.Time{}
	for _, c := range h.Cancels {
		cancelled[c.ID] = c.At
	}
	limited := map[string]bool{}
	for _, c := range h.Limits {
		limited[c.Tenant] = true
	}
	type group struct{ tt, tenant string }
	type span struct {
		from, to time.Time
		limit    int
		run      RunRec
	}
	spans := map[group][]span{}
	raw := map[group][]span{}
	for _, r := range h.Runs {
		j, ok := job[r.ID]
		if !ok || !limited[j.Tenant] || r.Claimed.IsZero() {
			continue
		}
		conc, _, _, _ := limitAt(h.Limits, j.Tenant, r.Claimed)
		if conc <= 0 {
			continue
		}
		g := group{j.TaskType, j.Tenant}
		v.LimitRuns++
		raw[g] = append(raw[g], span{r.Start, runEnd(r), conc, r})
		// The run stops counting when its work ends and its completing
		// transaction begins (its commit frees the slot, before the
		// handler returns), when its holder froze or was killed (its lease
		// lapses then), or when the job was cancelled.
		end := runEnd(r)
		full := end
		for _, f := range freezes[r.Worker] {
			if f.To.After(r.Start) && f.From.Before(end) {
				end = maxTime(f.From, r.Start)
			}
		}
		if k, ok := h.Kills[r.Worker]; ok && k.Before(end) {
			end = maxTime(k, r.Start)
		}
		if c, ok := cancelled[r.ID]; ok && c.Before(end) {
			end = maxTime(c, r.Start)
		}
		if end.Before(full) {
			v.LimitLapsed++
		}
		if end.After(r.Start) {
			spans[g] = append(spans[g], span{r.Start, end, conc, r})
		}
	}
	if v.LimitMax == nil {
		v.LimitMax, v.LimitMaxAll = map[string]int{}, map[string]int{}
	}
	sweep := func(ss []span, report func(bound, n int, at time.Time, running []span)) {
		type ev struct {
			at    time.Time
			d     int
			limit int
			i     int
		}
		var evs []ev
		for i, s := range ss {
			evs = append(evs, ev{s.from, 1, s.limit, i}, ev{s.to, -1, s.limit, i})
		}
		sort.Slice(evs, func(i, j int) bool {
			if !evs[i].at.Equal(evs[j].at) {
				return evs[i].at.Before(evs[j].at)
			}
			return evs[i].d < evs[j].d // an end before a start at one instant
		})
		active := map[int]int{}
		running := map[int]bool{}
		n := 0
		for _, e := range evs {
			active[e.limit] += e.d
			n += e.d
			if e.d < 0 {
				delete(running, e.i)
				continue
			}
			running[e.i] = true
			bound := 0
			for l, c := range active {
				if c > 0 && l > bound {
					bound = l
				}
			}
			var rs []span
			if n > bound {
				for i := range running {
					rs = append(rs, ss[i])
				}
			}
			report(bound, n, e.at, rs)
		}
	}
	for g, ss := range spans {
		sweep(ss, func(bound, n int, at time.Time, running []span) {
			k := fmt.Sprintf("L=%d", bound)
			v.LimitMax[k] = max(v.LimitMax[k], n)
			if n > bound {
				var desc []string
				for _, s := range running {
					desc = append(desc, fmt.Sprintf("%s by %s claimed %s ran %s-%s (%s)", s.run.ID, s.run.Worker, s.run.Claimed.Format("15:04:05.000"),
						s.run.Start.Format("15:04:05.000"), s.run.End.Format("15:04:05.000"), s.run.Err))
				}
				sort.Strings(desc)
				v.violate("tenant %.8q… (%s): %d jobs ran at once at %s under a concurrency limit of %d (runs whose holder froze or was killed not counted): %s",
					g.tenant, g.tt, n, at.Format("15:04:05.000"), bound, strings.Join(desc, "; "))
			}
		})
	}
	for _, ss := range raw {
		sweep(ss, func(bound, n int, _ time.Time, _ []span) {
			k := fmt.Sprintf("L=%d", bound)
			v.LimitMaxAll[k] = max(v.LimitMaxAll[k], n)
		})
	}
	checkRate(h, job, limited, v)
}

// checkRate checks the starts of each tenant under a rate: in any window
// from one claim to a later one of W seconds, at most B + R·W claims, W
// widened by the clocks' disagreement (a claim's time is the claimer's) and
// a quarter second for when the worker records its claim.
func checkRate(h History, job map[quick.ID]JobRec, limited map[string]bool, v *Verdict) {
	type group struct{ tt, tenant string }
	claims := map[group][]time.Time{}
	for _, c := range h.Claims {
		j, ok := job[c.ID]
		if !ok || !limited[j.Tenant] || c.Claimed.IsZero() {
			continue
		}
		if _, rate, _, settled := limitAt(h.Limits, j.Tenant, c.Claimed); rate <= 0 || !settled {
			continue
		}
		g := group{j.TaskType, j.Tenant}
		claims[g] = append(claims[g], c.Claimed)
	}
	for g, ts := range claims {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		v.RateClaims += len(ts)
		for j := range ts {
			_, rate, burst, _ := limitAt(h.Limits, g.tenant, ts[j])
			inSecond := 0
			for i := j; i >= 0; i-- {
				w := ts[j].Sub(ts[i])
				if _, r2, _, _ := limitAt(h.Limits, g.tenant, ts[i]); r2 != rate {
					break // another rate's phase
				}
				if w < time.Second {
					inSecond++
				}
				allowed := float64(burst) + rate*(w+h.skewSlack()).Seconds()
				if n := j - i + 1; float64(n) > allowed+1 {
					v.violate("tenant %.8q… (%s): %d starts in %v under a rate of %v/s with a burst of %d", g.tenant, g.tt, n, w.Round(time.Millisecond), rate, burst)
					break
				}
			}
			v.RateMaxInSecond = max(v.RateMaxInSecond, inSecond)
		}
	}
}

// skewSlack widens the rate check's windows by the clocks' disagreement.
func (h History) skewSlack() time.Duration { return 2*h.Skew + 250*time.Millisecond }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// runEnd is when a run stops holding its limit slot, its holder alive:
// when its completing transaction began (Done), else when it returned.
func runEnd(r RunRec) time.Time {
	if !r.Done.IsZero() && r.Done.Before(r.End) {
		return r.Done
	}
	return r.End
}
