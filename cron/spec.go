package cron

import (
	"strings"
	"time"
	// Every worker must be able to load every stored schedule's zone, or it
	// could not schedule a successor; the embedded database is the fallback
	// when a host has no zoneinfo (about 450 KB of binary).
	_ "time/tzdata"

	gocron "github.com/netresearch/go-cron"
)

// parser accepts 5 fields (minute hour day-of-month month day-of-week), an
// optional leading seconds field, and descriptors (@yearly, @monthly,
// @weekly, @daily, @hourly, @every <duration>). DowOrDom restores the
// standard (Vixie) rule, which netresearch/go-cron does not apply by default
// (it ANDs the two fields): when both day-of-month and day-of-week are
// restricted, a day matching either fires; when one is "*", the other
// decides. As in robfig/cron, only a bare "*" (or "?") counts as
// unrestricted, not "*/2". The extended syntax (L, W, #n, H) and the year
// field are left off, so every spec means the same in any standard cron.
// The search for a next time spans 10 years, so a schedule such as February
// 29th (at most 8 years apart) is valid and one that can never fire (February
// 30th) is refused.
var parser = gocron.MustNewParser(gocron.SecondOptional | gocron.Minute | gocron.Hour |
	gocron.Dom | gocron.Month | gocron.Dow | gocron.Descriptor | gocron.DowOrDom).
	WithMaxSearchYears(10)

// starBit is go-cron's mark of a field given as "*" (bit 63 of the field's
// bit set; the constant is unexported there).
const starBit = uint64(1) << 63

// plan is a parsed schedule: the times at which it fires.
type plan struct {
	lib   gocron.Schedule
	spec  *gocron.SpecSchedule // nil for @every
	every time.Duration        // for @every
}

// parseSpec parses spec in a time zone. The zone comes from tz or from a
// CRON_TZ= (or TZ=) prefix of the spec, not both; with neither it is UTC, so
// that every worker computes the same times whatever its host's zone.
func parseSpec(spec, tz string, now time.Time) (plan, error) {
	spec = strings.TrimSpace(spec)
	fail := func(reason string, err error) (plan, error) {
		return plan{}, &SpecError{Spec: spec, TimeZone: tz, Reason: reason, Err: err}
	}
	if spec == "" {
		return fail("empty spec", nil)
	}
	body := spec
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		zone, rest, ok := strings.Cut(spec[strings.Index(spec, "=")+1:], " ")
		if !ok || strings.TrimSpace(rest) == "" {
			return fail("no fields after the time zone", nil)
		}
		if tz != "" && tz != zone {
			return fail("time zone given twice, "+zone+" in the spec and "+tz+" in TimeZone", nil)
		}
		tz, body = zone, strings.TrimSpace(rest)
	}
	loc, err := loadZone(tz)
	if err != nil {
		return fail("unknown time zone", err)
	}
	s, err := parser.Parse(body)
	if err != nil {
		return fail("does not parse", err)
	}
	p := plan{lib: s}
	switch v := s.(type) {
	case *gocron.SpecSchedule:
		// The parser gives time.Local to a spec without a zone; ours is
		// never the host's.
		v.Location = loc
		p.spec = v
	case gocron.ConstantDelaySchedule:
		p.every = v.Delay
	default:
		return fail("unsupported schedule type", nil)
	}
	if p.next(now).IsZero() {
		return fail("never fires (no time matches within 10 years)", nil)
	}
	return p, nil
}

// loadZone loads an IANA zone; "" is UTC. "Local" is refused: it would mean
// a different zone on each host.
func loadZone(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if tz == "Local" {
		return nil, errLocalZone
	}
	return time.LoadLocation(tz)
}

type zoneError string

func (e zoneError) Error() string { return string(e) }

const errLocalZone = zoneError(`"Local" depends on each host's settings; name an IANA zone`)

// maxRepeatSkips bounds the walk over the second pass of a repeated hour (a
// per-second schedule has 3,600 times in it).
const maxRepeatSkips = 4000

// next returns the first time after t at which the schedule fires, or the
// zero time if there is none. Daylight saving time, in the schedule's zone:
//   - spring forward: a time in the skipped hour (02:30 on the day New York
//     jumps from 02:00 to 03:00) fires once, at the same offset past the
//     jump (03:30), as go-cron computes;
//   - fall back: a spec whose hour field is restricted (30 1 * * *) fires
//     once, in the first pass of the repeated hour, as Vixie and ISC cron
//     do; go-cron alone would fire it twice. A spec with "*" hours
//     (*/15 * * * *, @hourly) fires in both passes, since real time passes.
func (p plan) next(t time.Time) time.Time {
	n := p.lib.Next(t)
	if p.spec == nil || p.spec.Hour&starBit != 0 {
		return n
	}
	for i := 0; i < maxRepeatSkips && !n.IsZero() && repeatedWallClock(n, p.spec.Location); i++ {
		n = p.lib.Next(n)
	}
	return n
}

// repeatedWallClock reports whether the wall-clock time of t in loc was
// already shown earlier, in the first pass of a fall-back transition.
// Transitions shift clocks by 30 minutes, 1 hour or 2 hours.
func repeatedWallClock(t time.Time, loc *time.Location) bool {
	lt := t.In(loc)
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := t.Add(-d).In(loc)
		if e.Hour() == lt.Hour() && e.Minute() == lt.Minute() && e.Second() == lt.Second() && e.YearDay() == lt.YearDay() {
			return true
		}
	}
	return false
}

// latest returns the last time at which the schedule fires in [from, now],
// given that from is one. For @every, whose times are from + k·interval, it
// is arithmetic; for specs, go-cron's Prev, checked against next (Prev
// disagrees with Next around DST gaps); failing that, a bounded walk.
func (p plan) latest(from, now time.Time) time.Time {
	if now.Before(from) {
		return time.Time{}
	}
	if p.spec == nil {
		k := now.Sub(from) / p.every
		return from.Add(k * p.every)
	}
	c := p.spec.Prev(now.Truncate(time.Second).Add(time.Second))
	if c.After(from) && !c.After(now) && p.next(c.Add(-time.Second)).Equal(c) {
		return c
	}
	last := from
	for i := 0; i < 10_000; i++ {
		n := p.next(last)
		if n.IsZero() || n.After(now) {
			break
		}
		last = n
	}
	return last
}
