package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/quick"
)

// chainSchedule is chain i as first registered. Chain 0 has one attempt
// per occurrence: a kill or pause mid-run leaves it exhausted, and the
// claim that dead-letters it must enqueue its successor.
func chainSchedule(cfg Config, i int) cron.Schedule {
	s := cron.Schedule{Name: fmt.Sprintf("chain-%d", i), Spec: cfg.CronSpec, TaskType: cronType}
	if i == 0 {
		s.MaxAttempts = 1
	}
	return s
}

// editCron edits a random chain (see editable) every CronEditEvery on
// average while ctx lasts: its spec toggled, its task type toggled (every
// worker handles both), or the schedule removed and registered again at
// once. Occurrences
// run meanwhile, so each edit races completions. At the end every chain is
// registered again as last edited, so a Remove whose Register failed
// leaves no chain removed.
func (h *harness) editCron(ctx context.Context, chains []cron.Schedule) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 200))
	altSpec := "@every 2s"
	if h.cfg.CronSpec == altSpec {
		altSpec = "@every 1s"
	}
	// An edit enqueues the chain's next occurrence.
	var q *quick.Queue
	run := func(f func(context.Context) error) {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var err error
		if q, err = h.admin(ectx, false); err == nil {
			err = f(ectx)
		}
		if err != nil {
			h.logger.Warn("soak: cron edit", "err", err)
		}
	}
	// The first three edits, a second apart, are one of each kind; then
	// kinds and chains are drawn at random.
	for n := 0; sleep(ctx, h.editWait(rng, n)); n++ {
		s := &chains[h.editable(rng, len(chains))]
		kind := n
		if n >= 3 {
			kind = rng.IntN(3)
		}
		h.editMu.Lock()
		h.edited[s.Name] = true
		h.editMu.Unlock()
		switch kind {
		case 0:
			if s.Spec == altSpec {
				s.Spec = h.cfg.CronSpec
			} else {
				s.Spec = altSpec
			}
		case 1:
			if s.TaskType == cronType {
				s.TaskType = cronType2
			} else {
				s.TaskType = cronType
			}
		case 2:
			h.editMu.Lock()
			h.recreated[s.Name] = true
			h.editMu.Unlock()
			name := s.Name
			run(func(ctx context.Context) error {
				if err := cron.Remove(ctx, q, name); err != nil && !errors.Is(err, cron.ErrNotFound) {
					return err
				}
				return nil
			})
		}
		sc := *s
		run(func(ctx context.Context) error { return cron.Register(ctx, q, sc) })
		h.edits.Add(1)
	}
	for _, s := range chains {
		run(func(ctx context.Context) error { return cron.Register(ctx, q, s) })
	}
}

func (h *harness) editWait(rng *rand.Rand, n int) time.Duration {
	if n < 3 {
		return time.Second
	}
	return time.Duration(rng.ExpFloat64() * float64(h.cfg.CronEditEvery))
}

// editable draws the chain to edit: any but chain 0 when there are others,
// so that chain 0's exhausted occurrence is dead-lettered by a claim (with
// its successor) rather than cancelled by an edit, and every soak checks
// that path.
func (h *harness) editable(rng *rand.Rand, n int) int {
	if n == 1 {
		return 0
	}
	return 1 + rng.IntN(n-1)
}
