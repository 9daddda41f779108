package main

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// The demo's tenants: every job belongs to one (NewJob.ItemSpace), and each
// tenant's jobs of a task type are its zone, a queue of its own with its own
// lanes. One tenant is hot: about half of all jobs are its own, so its
// email zone backs up, grows its lanes and splits its backlog, while the
// others' jobs start as soon as a worker is free (the pointer index takes
// lanes oldest first, whichever tenant they are).
var demoTenants = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark"}

const (
	demoHotTenant = "acme"
	demoHotType   = "email"
	// demoHotShare is the hot tenant's share of the jobs.
	demoHotShare = 0.5
	// demoHotWork is how many times longer the hot tenant's jobs work:
	// enough that its backlog outlasts the second after which a claim
	// grows a zone (quick/lanestate.go), with the demo's default --jobs.
	demoHotWork = 4
)

// demoTenant draws the tenant of a job of task type t.
func demoTenant(rng *rand.Rand, t string) string {
	if rng.Float64() < demoHotShare {
		return demoHotTenant
	}
	return demoTenants[1+rng.IntN(len(demoTenants)-1)]
}

// demoQueueOptions are the queue options of quick demo and quick ui --demo.
func demoQueueOptions(clk clock.Clock, logger *slog.Logger, backoff func(int) time.Duration) quick.Options {
	return quick.Options{
		Clock:       clk,
		MaxAttempts: 5,
		Backoff:     backoff,
		Logger:      logger,
	}
}

// demoTenantJobs is one tenant's share of the demo's jobs, in the summary.
type demoTenantJobs struct {
	ItemSpace string `json:"item_space"`
	Jobs      int    `json:"jobs"`
	Hot       bool   `json:"hot,omitempty"`
}

// demoTenantsOf counts the jobs of each tenant, most first.
func demoTenantsOf(jobs []quick.NewJob) []demoTenantJobs {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.ItemSpace]++
	}
	out := make([]demoTenantJobs, 0, len(n))
	for t, c := range n {
		out = append(out, demoTenantJobs{ItemSpace: t, Jobs: c, Hot: t == demoHotTenant})
	}
	slices.SortFunc(out, func(a, b demoTenantJobs) int {
		if a.Jobs != b.Jobs {
			return b.Jobs - a.Jobs
		}
		return strings.Compare(a.ItemSpace, b.ItemSpace)
	})
	return out
}

// zoneGrowth is a zone whose lanes grew while the demo watched.
type zoneGrowth struct {
	TaskType  string `json:"task_type"`
	ItemSpace string `json:"item_space"`
	From      int    `json:"from"`
	To        int    `json:"to"`
}

// zoneWatch remembers the lanes of the zones the demo has read, to tell
// when one grows.
type zoneWatch struct {
	lanes map[[2]string]int
	// grown is each zone that grew, with its first and latest count.
	grown []zoneGrowth
}

func newZoneWatch() *zoneWatch { return &zoneWatch{lanes: map[[2]string]int{}} }

// see notes a zone's lane count (quick.ZoneInfo's, the lanes new jobs are
// spread over) and returns its growth since the last look, if it grew.
func (z *zoneWatch) see(rep zoneReport) (zoneGrowth, bool) {
	k := [2]string{rep.TaskType, rep.ItemSpace}
	was, ok := z.lanes[k]
	z.lanes[k] = max(was, rep.ZoneLanes)
	if !ok || rep.ZoneLanes <= was {
		return zoneGrowth{}, false
	}
	g := zoneGrowth{TaskType: rep.TaskType, ItemSpace: rep.ItemSpace, From: was, To: rep.ZoneLanes}
	i := slices.IndexFunc(z.grown, func(x zoneGrowth) bool { return x.TaskType == g.TaskType && x.ItemSpace == g.ItemSpace })
	if i < 0 {
		z.grown = append(z.grown, g)
	} else {
		z.grown[i].To = g.To
	}
	return g, true
}
