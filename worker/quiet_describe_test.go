package worker

import (
	"fmt"
	"strings"
	"time"
)

// notQuiet says which of quiet's conditions w fails now, for a settle that
// timed out: the loop that never parked, or the work still pending, is
// where to look.
func (w *Worker) notQuiet() string {
	now := w.clk.Now()
	var out []string
	loop := func(name string, p *park) {
		if !p.asleep(now) {
			u := p.until.Load()
			switch u {
			case 0:
				out = append(out, name+" running")
			default:
				out = append(out, fmt.Sprintf("%s due at %s (now %s)", name, time.Unix(0, u).UTC().Format("15:04:05.000"), now.UTC().Format("15:04:05.000")))
			}
		}
	}
	loop("keeper", &w.keeper.loopState)
	if w.keeper.pending() {
		out = append(out, "keeper pending")
	}
	if w.keeper.waitingOnLock() {
		out = append(out, "keeper waiting on a job's lock")
	}
	loop("acker", &w.acker.loopState)
	if w.acker.pending() {
		out = append(out, "acks pending")
	}
	loop("duties", &w.dutyState)
	if _, known := w.pause.isPaused(""); !known {
		out = append(out, "paused types not read yet")
	}
	loop("clock check", &w.zclock.loopState)
	for _, r := range w.snapshotRunners() {
		loop(r.taskType+" short lanes", &r.shorts.loopState)
		if r.shorts.pending() {
			out = append(out, r.taskType+" short lanes pending")
		}
		if n := len(r.feed.ch); n > 0 {
			out = append(out, fmt.Sprintf("%s: %d lanes handed to executors not taken up", r.taskType, n))
		}
		for i := range r.zparks {
			loop(fmt.Sprintf("%s claim loop %d", r.taskType, i), &r.zparks[i])
		}
	}
	if len(out) == 0 {
		return "quiet"
	}
	return strings.Join(out, ", ")
}
