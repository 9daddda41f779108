package cron

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/quick"
)

// Repair restarts the chains that broke: for each schedule with no pending
// or running occurrence it enqueues the occurrence at the schedule's next
// time after now, and returns how many it restored. The times missed while
// a chain was broken are skipped, whatever the MissedRuns policy: nothing
// records when the chain broke, nor whether its last occurrence ran.
//
// A chain breaks when an occurrence leaves the queue without scheduling a
// successor: a manual cancel or purge, a claim that dead-letters it (its
// attempts spent by holders that vanished) made through a queue handle
// without cron's hook (Handle sets it), a crash between the steps of
// Register, or a definition that did not parse on the worker that
// completed it.
//
// Any process may run Repair, any number at once: it reads the definitions
// and their unique keys in one snapshot transaction (one range read plus
// one point read per schedule) and writes only for broken chains, each in a
// transaction of its own whose enqueue reads the unique key serializably
// and uses the deterministic occurrence ID, so concurrent repairs and a
// concurrent completion never enqueue two occurrences. RunRepairer runs it
// periodically.
func Repair(ctx context.Context, q *quick.Queue) (restored int, err error) {
	all, err := readAll(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("cron: repair: %w", err)
	}
	var errs []error
	for _, s := range all {
		if s.err != nil {
			errs = append(errs, fmt.Errorf("cron: repair: %w", s.err))
			continue
		}
		if !s.holder.IsZero() {
			continue
		}
		ok, err := ensure(ctx, q, s.name, time.Time{})
		if err != nil {
			if ctx.Err() != nil {
				return restored, fmt.Errorf("cron: repair: %w", err)
			}
			errs = append(errs, fmt.Errorf("cron: repair %q: %w", s.name, err))
			continue
		}
		if ok {
			restored++
			q.Options().Logger.Info("cron: restored a broken chain", "schedule", s.name)
		}
	}
	return restored, errors.Join(errs...)
}

// RunRepairer runs Repair every period (with ±10% jitter, so the processes
// that run it spread out) until ctx is done, logging what it does; it
// returns ctx's error. Run it in every worker process, or in a few: the
// cost is a snapshot read of the definitions per period, and concurrent
// repairs are safe. The period bounds how long a broken chain stays broken;
// a minute suits most schedules. clk nil means the queue's clock.
func RunRepairer(ctx context.Context, q *quick.Queue, period time.Duration, clk clock.Clock) error {
	if period <= 0 {
		return fmt.Errorf("%w: repair period %v", ErrInvalidSchedule, period)
	}
	if clk == nil {
		clk = q.Options().Clock
	}
	log := q.Options().Logger
	for {
		n, err := Repair(ctx, q)
		if err != nil && ctx.Err() == nil {
			log.Warn("cron: repair", "err", err)
		}
		if n > 0 {
			log.Info("cron: repair restored chains", "restored", n)
		}
		jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(period))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(period + jitter):
		}
	}
}
