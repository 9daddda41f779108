package cron

import (
	"fmt"
	"time"
)

// MaxNextTimes bounds NextTimes.
const MaxNextTimes = 100

// NextTimes returns the first n times after `after` at which s's spec fires,
// in its time zone, as the workers compute them (so a console can show a
// schedule's upcoming runs). It reads nothing; n is capped at MaxNextTimes,
// and fewer come back for a spec that stops firing.
func NextTimes(s Schedule, after time.Time, n int) ([]time.Time, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: asked for %d next times", ErrInvalidSchedule, n)
	}
	p, err := parseSpec(s.Spec, s.TimeZone, after)
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, 0, min(n, MaxNextTimes))
	t := after
	for len(out) < min(n, MaxNextTimes) {
		t = p.next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}
