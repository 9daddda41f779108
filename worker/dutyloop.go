package worker

import (
	"context"
	"errors"
	"time"
)

// dutyLoop runs the worker's share of the background duties: it wakes when
// the earliest duty it knows of falls due, tries to take each due duty
// (takeDuty), runs those it took, and records their outcome. A worker
// whose clock stands by runs no duty: the others do.
//
// Cost: per duty and period, one transaction on each worker that looks
// (one point read; a write only for the worker that takes it), plus the
// pass itself and one transaction to record it.
func (w *Worker) dutyLoop() {
	defer w.dutyState.forever()
	if w.cfg.DisableDuties {
		return
	}
	w.mu.Lock()
	duties := append([]Duty(nil), w.duties...)
	if !w.cfg.NoBuiltinDuties {
		duties = append(w.builtinDuties(), duties...)
	}
	w.mu.Unlock()
	if len(duties) == 0 {
		return
	}
	// The first look waits a period (at most DutyLease), so a worker that
	// starts does not add transactions to its first seconds.
	due := make([]time.Time, len(duties))
	start := w.clk.Now()
	for i, d := range duties {
		due[i] = start.Add(min(d.Every, DutyLease))
	}
	for {
		next := due[0]
		for _, t := range due[1:] {
			if t.Before(next) {
				next = t
			}
		}
		now := w.clk.Now()
		if next.After(now) {
			timer := w.clk.After(next.Sub(now))
			w.dutyState.at(next)
			select {
			case <-timer:
			case <-w.stopCh:
				return
			case <-w.bg.Done():
				return
			}
			w.dutyState.run()
		}
		for i, d := range duties {
			if w.stopping() {
				return
			}
			if w.clk.Now().Before(due[i]) {
				continue
			}
			due[i] = w.runDuty(d)
		}
	}
}

// mayRunDuties reports whether the worker's clock lets it run duties: the
// clock check has run and does not stand the worker by. (Duties are safe to
// run twice, and a duty's record keeps the others off.)
func (w *Worker) mayRunDuties() bool {
	known, standby := w.zclock.state()
	return known && !standby
}

// runDuty takes d if it is due and free, runs it, and records the pass. It
// returns when to look at d again.
func (w *Worker) runDuty(d Duty) time.Time {
	log := w.log.With("duty", d.Name)
	now := w.clk.Now()
	retry := now.Add(min(d.Every, DutyLease))
	if !w.mayRunDuties() {
		return retry
	}
	ctx, cancel := context.WithTimeout(w.bg, 10*time.Second)
	took, next, err := w.takeDuty(ctx, d)
	cancel()
	if err != nil {
		if w.bg.Err() == nil {
			log.Warn("worker: could not take a duty", "err", err)
		}
		return retry
	}
	if !took {
		// Not due yet, or another worker runs it: look again then.
		return next
	}
	start := w.clk.Now()
	rctx, rcancel := context.WithTimeout(w.bg, DutyLease)
	rep, runErr := d.Run(rctx)
	rcancel()
	if runErr != nil {
		log.Warn("worker: duty failed", "err", runErr)
	} else {
		log.Info("worker: duty done", "count", rep.Count, "detail", rep.Detail, "took", w.clk.Now().Sub(start))
	}
	fctx, fcancel := context.WithTimeout(w.bg, 10*time.Second)
	next, err = w.finishDuty(fctx, d, start, rep, runErr)
	fcancel()
	if err != nil {
		if errors.Is(err, errDutyLost) {
			log.Warn("worker: a duty outlived its lease; another worker took it over", "lease", DutyLease)
		} else if w.bg.Err() == nil {
			log.Warn("worker: could not record a duty", "err", err)
		}
		return retry
	}
	return next
}
