package worker

import (
	"context"
	"sync"
)

// pauses follows the queue's paused task types (quick.Queue.Pause): the
// worker keeps one kv watch on the queue's pause version and reads the
// paused types again only when it fires, so pausing costs nothing per job
// and nothing per claim. Claim loops consult it when they are about to
// claim (runner.refuse); a resumed type is claimed again within one
// heartbeat period. Until the first read, every type counts as paused, so
// a worker started while its type is paused claims nothing.
type pauses struct {
	mu     sync.Mutex
	known  bool
	paused map[string]bool
}

func (p *pauses) isPaused(taskType string) (paused, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused[taskType], p.known
}

func (p *pauses) set(types map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused, p.known = types, true
}

// pauseLoop reads the paused types and waits for the next change, until
// the worker stops.
func (w *Worker) pauseLoop() {
	ctx, cancel := context.WithCancel(w.bg)
	defer cancel()
	go func() {
		select {
		case <-w.stopCh:
		case <-w.killCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	for ctx.Err() == nil {
		paused, watch, err := w.q.WatchPaused(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("worker: cannot read paused task types; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-w.clk.After(w.cfg.HeartbeatPeriod):
			}
			continue
		}
		m := make(map[string]bool, len(paused))
		for t := range paused {
			m[t] = true
		}
		w.logPauseChanges(m)
		w.pause.set(m)
		// Claim loops refusing on the pause (or on not knowing it yet)
		// sleep until a heartbeat round: wake them to look again now.
		for _, r := range w.snapshotRunners() {
			r.signalBeat()
		}
		err = watch.Wait(ctx)
		watch.Cancel()
		if err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-w.clk.After(w.cfg.HeartbeatPeriod):
			}
		}
	}
}

// logPauseChanges logs the pauses and resumes of this worker's task types.
func (w *Worker) logPauseChanges(now map[string]bool) {
	w.pause.mu.Lock()
	before := w.pause.paused
	w.pause.mu.Unlock()
	for _, t := range w.TaskTypes() {
		switch {
		case now[t] && !before[t]:
			w.log.Info("worker: task type paused; not claiming it until resumed", "task_type", t)
		case !now[t] && before[t]:
			w.log.Info("worker: task type resumed", "task_type", t)
		}
	}
}
