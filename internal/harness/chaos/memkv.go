package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// MemFaults are the faults of a run on memkv, where no server process can
// die: every write commit may fail (1021 applied or not, a spurious
// 1020), at a low rate all along and at a high rate in bursts, the way a
// recovery returns them in bursts on a cluster.
type MemFaults struct {
	Base, Burst kv.Faults
	// BurstFor is how long a burst lasts.
	BurstFor time.Duration
	// FreezeFor, when positive, adds a step to the schedule that freezes
	// one worker (its clock: its lease keeper and handlers stop) for that
	// long, past its leases: they are taken over, and its runs wake under
	// stale tokens.
	FreezeFor time.Duration
}

// DefaultMemFaults: a worker frozen past its 10 s leases in each round;
// 1% of write commits each 1021 applied, 1021 dropped
// and 1020, and 0.5% each a 1031 timeout striking the commit in flight
// (applied or not: it ends the retry loop, so some producer transactions
// fail or end unknown) all along; 15% each of the first three during a
// burst of a second.
func DefaultMemFaults() MemFaults {
	return MemFaults{
		Base: kv.Faults{Seed: 1, UnknownCommitted: 0.01, UnknownNotCommitted: 0.01, Conflict: 0.01,
			TimedOutCommitted: 0.005, TimedOutNotCommitted: 0.005},
		Burst:     kv.Faults{Seed: 2, UnknownCommitted: 0.15, UnknownNotCommitted: 0.15, Conflict: 0.15},
		BurstFor:  time.Second,
		FreezeFor: quick.MinLease + 2*time.Second,
	}
}

// MemEnv is a run on a fresh memkv database with workers as goroutines
// (InProcess) and mf's faults: a commit-fault burst and a frozen worker
// as the steps of the schedule. stats reads the faults injected so far.
func MemEnv(mf MemFaults, out io.Writer, log *slog.Logger) (env Env, stats func() kv.FaultStats, closeDB func()) {
	db := memkv.Open(memkv.Options{})
	burst := kv.WithFaults(db, mf.Burst)
	burst.SetEnabled(false)
	base := kv.WithFaults(burst, mf.Base)
	fault := Fault{Name: "commit-fault burst", Do: func(ctx context.Context) (string, error) {
		burst.SetEnabled(true)
		defer burst.SetEnabled(false)
		before := burst.Stats().Total()
		select {
		case <-ctx.Done():
		case <-time.After(mf.BurstFor):
		}
		return fmt.Sprintf("%d faults injected in %v", burst.Stats().Total()-before, mf.BurstFor), nil
	}}
	fr := &freezer{}
	faults := []Fault{fault}
	if mf.FreezeFor > 0 {
		faults = append(faults, fr.fault(mf.FreezeFor))
	}
	env = Env{DB: base, Spawn: inProcess(base, log, fr), Faults: faults, Engine: "memkv (workers as goroutines) with injected commit faults", Log: out}
	stats = func() kv.FaultStats {
		a, b := base.Stats(), burst.Stats()
		return kv.FaultStats{
			UnknownCommitted: a.UnknownCommitted + b.UnknownCommitted, UnknownNotCommitted: a.UnknownNotCommitted + b.UnknownNotCommitted,
			Conflicts: a.Conflicts + b.Conflicts, TimedOutCommitted: a.TimedOutCommitted, TimedOutNotCommitted: a.TimedOutNotCommitted,
		}
	}
	return env, stats, func() { db.Close() }
}
