package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster"
)

// Fault is one step of the fault schedule. Do breaks something, puts it
// back (a killed process started again, an excluded one included) and
// returns once the database is available again; detail says what it did.
type Fault struct {
	Name string
	// Kills is how many server processes Do kills with SIGKILL.
	Kills int
	// Once faults run only in the schedule's first round.
	Once bool
	Do   func(ctx context.Context) (detail string, err error)
}

// FaultRec is a fault that ran.
type FaultRec struct {
	Name       string `json:"name"`
	Detail     string `json:"detail"`
	Err        string `json:"err,omitempty"`
	Kills      int    `json:"kills"`
	Start, End int64  `json:"-"` // unix ns
	// StartS and EndS are seconds since the run's start, for the report.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// ClusterFaults is the schedule on a local cluster (package cluster), one
// round: kill -9 and restart a storage process, a log process and the
// cluster controller's process (each the holder of that role in status
// json, taking turns among the holders); once, in the first round, kill
// and restart the whole cluster; exclude a storage process that is no
// coordinator (its data moves to the others) and include it back; change
// the coordinators (one of the three moves to another process of its
// class). Each step returns once the cluster is healthy again.
func ClusterFaults(c *cluster.Cluster, downtime, recover time.Duration) []Fault {
	turn := 0
	killRole := func(role string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			st, err := c.Status(ctx)
			if err != nil {
				return "", err
			}
			var holders []*cluster.Proc
			for _, a := range st.HoldersOf(role) {
				if p := c.ByAddr(a); p != nil {
					holders = append(holders, p)
				}
			}
			if len(holders) == 0 {
				return "", fmt.Errorf("no process of the cluster holds role %q in status json", role)
			}
			// Take turns among the holders, so that the kills spread over
			// the processes.
			turn++
			p := holders[turn%len(holders)]
			what := fmt.Sprintf("%s (%s; roles %s)", p.Name, p.Addr, strings.Join(st.RolesOf(p.Addr), ","))
			return killRestart(ctx, c, []*cluster.Proc{p}, what, downtime, recover)
		}
	}
	return []Fault{
		{Name: "kill storage", Kills: 1, Do: killRole(cluster.RoleStorage)},
		{Name: "kill log", Kills: 1, Do: killRole(cluster.RoleLog)},
		{Name: "kill cluster controller", Kills: 1, Do: killRole(cluster.RoleClusterController)},
		{Name: "restart the whole cluster", Kills: len(c.Procs), Once: true, Do: func(ctx context.Context) (string, error) {
			return killRestart(ctx, c, c.Procs, "every process", downtime, recover)
		}},
		{Name: "exclude and include", Do: func(ctx context.Context) (string, error) {
			coords, err := c.Coordinators()
			if err != nil {
				return "", err
			}
			var p *cluster.Proc
			for _, s := range c.OfClass(cluster.ClassStorage) {
				if !slices.Contains(coords, s.Addr) {
					p = s
					break
				}
			}
			if p == nil {
				return "", errors.New("every storage process is a coordinator: none to exclude")
			}
			start := time.Now()
			if err := c.Exclude(ctx, p, recover); err != nil {
				_ = c.Include(context.WithoutCancel(ctx), p)
				return "", err
			}
			moved := time.Since(start)
			if err := c.Include(ctx, p); err != nil {
				return "", err
			}
			if err := c.WaitHealthy(ctx, recover); err != nil {
				return "", err
			}
			return fmt.Sprintf("excluded %s (%s): safe to remove after %.1fs; included again, healthy after %.1fs", p.Name, p.Addr, moved.Seconds(), time.Since(start).Seconds()), nil
		}},
		{Name: "change coordinators", Do: func(ctx context.Context) (string, error) {
			coords, err := c.Coordinators()
			if err != nil {
				return "", err
			}
			// Swap the first coordinator for the first process that is
			// none, keeping one of each class where possible.
			var next []*cluster.Proc
			var out, in *cluster.Proc
			for _, a := range coords {
				if p := c.ByAddr(a); p != nil {
					next = append(next, p)
				}
			}
			if len(next) == 0 {
				return "", fmt.Errorf("no coordinator of the cluster file %v is a process of this cluster", coords)
			}
			out = next[0]
			for _, p := range c.Procs {
				if p.Class == out.Class && !slices.Contains(coords, p.Addr) {
					in = p
					break
				}
			}
			if in == nil {
				return "", fmt.Errorf("no process of class %s to move coordinator %s to", out.Class, out.Name)
			}
			next[0] = in
			start := time.Now()
			if err := c.SetCoordinators(ctx, next); err != nil {
				return "", err
			}
			if err := c.WaitAvailable(ctx, recover); err != nil {
				return "", err
			}
			return fmt.Sprintf("coordinator %s moved to %s; available after %.1fs", out.Addr, in.Addr, time.Since(start).Seconds()), nil
		}},
	}
}

// killRestart kills procs with SIGKILL, waits downtime, starts them again
// on their data directories and waits until the database is available.
func killRestart(ctx context.Context, c *cluster.Cluster, procs []*cluster.Proc, what string, downtime, recover time.Duration) (string, error) {
	for _, p := range procs {
		if err := c.Kill(p); err != nil {
			return "", err
		}
	}
	killed := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(downtime):
	}
	var errs []error
	for _, p := range procs {
		if err := c.StartProc(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	// Restarting processes must not be stopped by the run's end: bound
	// the waits by recover, not ctx. The next fault waits for a healthy
	// cluster (data fully replicated again), so that two faults never
	// take both replicas of a shard.
	wctx := context.WithoutCancel(ctx)
	if err := c.WaitAvailable(wctx, recover); err != nil {
		return "", err
	}
	avail := time.Since(killed)
	if err := c.WaitHealthy(wctx, recover); err != nil {
		return "", err
	}
	return fmt.Sprintf("SIGKILL %s, down %v; available %.1fs, healthy %.1fs after the kill", what, downtime, avail.Seconds(), time.Since(killed).Seconds()), nil
}

// runFaults runs the schedule in rounds from start+Baseline until
// start+Baseline+Duration (a fault under way is finished), FaultEvery
// apart, and returns what ran.
func runFaults(ctx context.Context, cfg Config, faults []Fault, start time.Time, logf func(string, ...any)) []FaultRec {
	var out []FaultRec
	if len(faults) == 0 {
		return nil
	}
	end := start.Add(cfg.Baseline + cfg.Duration)
	if !sleepUntil(ctx, start.Add(cfg.Baseline)) {
		return nil
	}
	for round := 0; ; round++ {
		for _, f := range faults {
			if f.Once && round > 0 {
				continue
			}
			if time.Now().After(end) || ctx.Err() != nil {
				return out
			}
			t0 := time.Now()
			logf("fault: %s ...", f.Name)
			detail, err := f.Do(ctx)
			t1 := time.Now()
			r := FaultRec{Name: f.Name, Detail: detail, Kills: f.Kills, Start: t0.UnixNano(), End: t1.UnixNano(),
				StartS: t0.Sub(start).Seconds(), EndS: t1.Sub(start).Seconds()}
			if err != nil {
				r.Err, r.Kills = err.Error(), 0
				logf("fault: %s FAILED after %.1fs: %v", f.Name, t1.Sub(t0).Seconds(), err)
			} else {
				logf("fault: %s: %s", f.Name, detail)
			}
			out = append(out, r)
			if !sleepUntil(ctx, time.Now().Add(cfg.FaultEvery)) {
				return out
			}
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
