package worker

import (
	"context"
	"time"
)

// heartbeatLoop keeps the runner's lanes.Tracker alive: Join (retried each
// period until it succeeds), then a Beat every HeartbeatPeriod on the worker
// clock, and Leave on a graceful stop. The tracker's own Run would tick on
// a lanes clock; driving Beat from here keeps every sleep of the worker on
// one clock.Clock, which a test's Fake advances.
func (r *runner) heartbeatLoop() {
	defer r.hbLoopState.forever()
	w := r.w
	log := w.log.With("task_type", r.taskType)
	period, timeout := w.cfg.HeartbeatPeriod, w.reg.Options().Timeout
	joined := false
	for {
		if r.zones {
			// The zones layout needs the registry only while schema-1 jobs
			// are left (s1_legacy.go): leave it, and wait until they are.
			if on, _ := r.legacy.get(); !on {
				if joined {
					if err := r.leave(true); err != nil && w.bg.Err() == nil {
						log.Warn("worker: leaving the lanes registry failed", "err", err)
					}
					joined = false
				}
				changed := r.legacy.changed()
				if on, _ := r.legacy.get(); !on {
					r.hbLoopState.forever()
					select {
					case <-changed:
						r.hbLoopState.run()
						continue
					case <-r.hbStop:
						r.leaveErr <- nil
						return
					case <-w.bg.Done():
						return
					}
				}
			}
		}
		// A round later than Timeout is worthless: the others count this
		// worker dead by then.
		ctx, cancel := context.WithTimeout(w.bg, timeout)
		var err error
		if joined {
			err = r.tracker.Beat(ctx)
		} else {
			err = r.tracker.Join(ctx)
			joined = err == nil
		}
		cancel()
		if err != nil {
			if w.bg.Err() != nil {
				return
			}
			log.Warn("worker: heartbeat failed", "err", err)
		} else {
			notify(r.beat)
		}
		// Arm the timer before saying when it fires: a test advances the
		// clock only once every loop says it sleeps, and an advance between
		// the two would leave this loop waiting a period past the advance.
		wakeAt := w.clk.After(period)
		r.hbLoopState.at(w.clk.Now().Add(period))
		select {
		case <-wakeAt:
			r.hbLoopState.run()
		case <-r.hbStop:
			r.leaveErr <- r.leave(joined)
			return
		case <-w.bg.Done():
			return
		}
	}
}

// leave deregisters the worker so the others take its lanes at their next
// beat rather than after the registry timeout.
func (r *runner) leave(joined bool) error {
	if !joined {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.w.bg, 10*time.Second)
	defer cancel()
	return r.tracker.Leave(ctx)
}

func (r *runner) stopHeartbeat() { r.hbStopOnce.Do(func() { close(r.hbStop) }) }
