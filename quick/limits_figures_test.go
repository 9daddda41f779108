package quick

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The figures of issue 24 for limits, as bounds: 16 workers (holders)
// claiming in turn on the fake clock. docs/performance.md, "Tenant limits:
// rate and weights with 16 workers", quotes the logged figures.

// limitWorkers is the fleet the figures are measured with.
const limitWorkers = 16

// A rate limit R (burst B) over a fake minute with 16 workers claiming in
// turn every 50 ms: the tenant's starts are within ±5% of R a second over
// the minute, and no one-second window holds more than the bucket allows
// (B + R: a full bucket, then its refill during the second); a tenant
// without limits in the same task type keeps its pace.
func TestLimitRateFigureSixteenWorkers(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		burst int
	}{{10, 10}, {2.5, 1}, {50, 20}} {
		t.Run(fmt.Sprintf("R=%v,B=%d", c.rate, c.burst), func(t *testing.T) {
			e := newZCEnv(t, Options{})
			setLimits(t, e.q, "a", Limits{Rate: c.rate, Burst: c.burst})
			const minute = 60 * time.Second
			e.jobsOf(t, "a", int(c.rate*70)+c.burst+100)
			e.jobsOf(t, "free", 2000)
			var starts []time.Time
			free := 0
			start := e.clk.Now()
			for e.clk.Now().Sub(start) < minute {
				for w := range limitWorkers {
					cl := e.claim(t, ClaimOptions{Max: 4, Holder: fmt.Sprintf("w%02d", w)})
					for _, l := range cl.Jobs {
						if l.ItemSpace == "a" {
							starts = append(starts, e.clk.Now())
						} else {
							free++
						}
					}
					e.complete(t, cl.Jobs...)
				}
				e.clk.Advance(50 * time.Millisecond)
			}
			perSec := float64(len(starts)) / minute.Seconds()
			worst := 0
			for i := range starts {
				j := i
				for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
					j++
				}
				worst = max(worst, j-i)
			}
			t.Logf("R=%v B=%d, 16 workers, fake minute: %d starts (%.2f/s, %.1f%% of R); most in one second %d (bound B+R = %.0f); unlimited tenant %d starts",
				c.rate, c.burst, len(starts), perSec, 100*perSec/c.rate, worst, float64(c.burst)+c.rate, free)
			if perSec < 0.95*c.rate || perSec > 1.05*c.rate {
				t.Fatalf("%.2f starts/s over the minute, want R=%v ± 5%%", perSec, c.rate)
			}
			if float64(worst) > float64(c.burst)+c.rate {
				t.Fatalf("%d starts in one second, over B + R = %v", worst, float64(c.burst)+c.rate)
			}
			if free < 1000 {
				t.Fatalf("the unlimited tenant started only %d jobs in the minute", free)
			}
		})
	}
}

// Weights 1:3 between two saturating tenants, 16 workers claiming in
// turn: shares within ±5% (relative) of 25/75.
func TestLimitWeightsFigureSixteenWorkers(t *testing.T) {
	e := newZCEnv(t, Options{MaxZoneLanes: 1})
	e.q.pickRand = rand.New(rand.NewPCG(7, 8)).Uint64
	if err := e.q.SetTypeLimits(e.ctx, "email", Limits{Weight: 1}); err != nil {
		t.Fatal(err)
	}
	setLimits(t, e.q, "b", Limits{Weight: 3})
	const rounds = 250
	e.jobsOf(t, "a", rounds*limitWorkers)
	e.jobsOf(t, "b", rounds*limitWorkers)
	n := map[string]int{}
	for range rounds {
		for w := range limitWorkers {
			cl := e.claim(t, ClaimOptions{Max: 1, Holder: fmt.Sprintf("w%02d", w)})
			for _, l := range cl.Jobs {
				n[l.ItemSpace]++
			}
			e.complete(t, cl.Jobs...)
		}
		e.clk.Advance(time.Millisecond)
	}
	share := float64(n["a"]) / float64(n["a"]+n["b"])
	t.Logf("weights 1:3, 16 workers, %d claims: a %d, b %d; a's share %.4f (want 0.25 ± 5%%)", rounds*limitWorkers, n["a"], n["b"], share)
	if share < 0.25*0.95 || share > 0.25*1.05 {
		t.Fatalf("a's share %.4f, want 0.25 ± 5%%", share)
	}
}
