package cron

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var ny = mustZone("America/New_York")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// times returns the first n times of p after from.
func times(t *testing.T, p plan, from time.Time, n int) []time.Time {
	t.Helper()
	var out []time.Time
	for x := from; len(out) < n; {
		x = p.next(x)
		if x.IsZero() {
			t.Fatalf("schedule ran out of times after %v", out)
		}
		out = append(out, x)
	}
	return out
}

func mustParse(t *testing.T, spec, tz string) plan {
	t.Helper()
	p, err := parseSpec(spec, tz, epoch)
	if err != nil {
		t.Fatalf("parseSpec(%q, %q): %v", spec, tz, err)
	}
	return p
}

func TestSpecTimes(t *testing.T) {
	utc := func(s string) time.Time {
		x, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			panic(err)
		}
		return x
	}
	nyt := func(s string) time.Time {
		x, err := time.ParseInLocation("2006-01-02 15:04:05", s, ny)
		if err != nil {
			panic(err)
		}
		return x
	}
	cases := []struct {
		name, spec, tz string
		from           time.Time
		want           []time.Time
	}{
		{"five fields", "*/15 * * * *", "", utc("2030-01-01 10:07:00"),
			[]time.Time{utc("2030-01-01 10:15:00"), utc("2030-01-01 10:30:00"), utc("2030-01-01 10:45:00")}},
		{"seconds field", "30 * * * * *", "", utc("2030-01-01 10:07:30"),
			[]time.Time{utc("2030-01-01 10:08:30"), utc("2030-01-01 10:09:30")}},
		{"every", "@every 5m", "", utc("2030-01-01 10:07:00"),
			[]time.Time{utc("2030-01-01 10:12:00"), utc("2030-01-01 10:17:00")}},
		{"daily is midnight UTC by default", "@daily", "", utc("2030-01-01 10:07:00"),
			[]time.Time{utc("2030-01-02 00:00:00"), utc("2030-01-03 00:00:00")}},
		{"time zone field", "0 9 * * *", "America/New_York", utc("2030-03-08 00:00:00"),
			// 09:00 EST is 14:00 UTC; after the switch, 09:00 EDT is 13:00 UTC.
			[]time.Time{utc("2030-03-08 14:00:00"), utc("2030-03-09 14:00:00"), utc("2030-03-10 13:00:00")}},
		{"CRON_TZ prefix", "CRON_TZ=America/New_York 0 9 * * *", "", utc("2030-03-08 00:00:00"),
			[]time.Time{utc("2030-03-08 14:00:00"), utc("2030-03-09 14:00:00"), utc("2030-03-10 13:00:00")}},
		{"same zone twice is fine", "TZ=America/New_York 0 9 * * *", "America/New_York", utc("2030-03-08 00:00:00"),
			[]time.Time{utc("2030-03-08 14:00:00")}},
		{"day of month OR day of week", "0 0 13 * FRI", "", utc("2030-09-01 00:00:00"),
			// Fridays of September 2030 (6, 20, 27) and the 13th (also a Friday).
			[]time.Time{utc("2030-09-06 00:00:00"), utc("2030-09-13 00:00:00"), utc("2030-09-20 00:00:00"), utc("2030-09-27 00:00:00"), utc("2030-10-04 00:00:00"), utc("2030-10-11 00:00:00"), utc("2030-10-13 00:00:00")}},
		{"DST gap: 02:30 on the spring-forward day runs once, after the jump", "30 2 * * *", "America/New_York", nyt("2030-03-09 12:00:00"),
			[]time.Time{nyt("2030-03-10 03:30:00"), nyt("2030-03-11 02:30:00")}},
		{"DST gap: hourly skips the missing hour", "0 * * * *", "America/New_York", nyt("2030-03-10 00:30:00"),
			[]time.Time{nyt("2030-03-10 01:00:00"), nyt("2030-03-10 03:00:00"), nyt("2030-03-10 04:00:00")}},
		{"DST fall back: a fixed time runs once", "30 1 * * *", "America/New_York", nyt("2030-11-02 12:00:00"),
			[]time.Time{nyt("2030-11-03 01:30:00"), nyt("2030-11-04 01:30:00")}},
		{"DST fall back: * hours run in both passes", "*/30 * * * *", "America/New_York", nyt("2030-11-03 00:45:00"),
			[]time.Time{nyt("2030-11-03 01:00:00"), nyt("2030-11-03 01:30:00"), nyt("2030-11-03 01:30:00").Add(30 * time.Minute), nyt("2030-11-03 01:30:00").Add(time.Hour), nyt("2030-11-03 02:00:00")}},
		{"leap day", "0 0 29 2 *", "", utc("2030-01-01 00:00:00"),
			[]time.Time{utc("2032-02-29 00:00:00"), utc("2036-02-29 00:00:00")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustParse(t, c.spec, c.tz)
			got := times(t, p, c.from, len(c.want))
			for i := range c.want {
				if !got[i].Equal(c.want[i]) {
					t.Fatalf("times after %v:\n got %v\nwant %v", c.from, got, c.want)
				}
			}
		})
	}
}

func TestSpecErrors(t *testing.T) {
	cases := []struct{ spec, tz, reason string }{
		{"", "", "empty spec"},
		{"bogus", "", "does not parse"},
		{"* * * *", "", "does not parse"},
		{"* * * * * * *", "", "does not parse"},
		{"61 * * * *", "", "does not parse"},
		{"@fortnightly", "", "does not parse"},
		{"@every 0s", "", "does not parse"},
		{"0 0 30 2 *", "", "never fires (no time matches within 10 years)"},
		{"* * * * *", "Mars/Olympus_Mons", "unknown time zone"},
		{"* * * * *", "Local", "unknown time zone"},
		{"CRON_TZ=Nowhere/Atall * * * * *", "", "unknown time zone"},
		{"CRON_TZ=America/New_York", "", "no fields after the time zone"},
		{"CRON_TZ=America/New_York * * * * *", "Europe/Paris", "time zone given twice, America/New_York in the spec and Europe/Paris in TimeZone"},
	}
	for _, c := range cases {
		_, err := parseSpec(c.spec, c.tz, epoch)
		var se *SpecError
		if !errors.Is(err, ErrInvalidSpec) || !errors.As(err, &se) {
			t.Errorf("parseSpec(%q, %q) = %v, want a *SpecError wrapping ErrInvalidSpec", c.spec, c.tz, err)
			continue
		}
		if se.Reason != c.reason {
			t.Errorf("parseSpec(%q, %q): reason %q, want %q (error: %v)", c.spec, c.tz, se.Reason, c.reason, err)
		}
	}
}

// TestLatestMatchesWalk checks latest (go-cron's Prev, checked) against a
// walk with next, over random specs and spans, DST included.
func TestLatestMatchesWalk(t *testing.T) {
	const h = time.Hour
	specs := []struct {
		spec, tz string
		span     time.Duration // of the gaps tried; the walk is span/period steps
	}{
		{"* * * * *", "", 6 * h}, {"*/7 * * * *", "America/New_York", 24 * h}, {"30 2 * * *", "America/New_York", 20 * 24 * h},
		{"30 1 * * *", "America/New_York", 20 * 24 * h}, {"0 */3 * * MON-FRI", "Europe/Paris", 20 * 24 * h}, {"15 10 1,15 * *", "", 90 * 24 * h},
		{"@every 90s", "", 6 * h}, {"@hourly", "America/New_York", 72 * h}, {"0 0 13 * FRI", "Australia/Lord_Howe", 60 * 24 * h},
		{"*/20 * * * * *", "", h},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range specs {
		p := mustParse(t, s.spec, s.tz)
		for i := 0; i < 100; i++ {
			// Around the 2030 transitions, and anywhere in the year.
			base := time.Date(2030, time.Month(rng.IntN(12)+1), rng.IntN(28)+1, rng.IntN(24), rng.IntN(60), 0, 0, time.UTC)
			if i%2 == 0 {
				base = []time.Time{time.Date(2030, 3, 10, 5, 0, 0, 0, time.UTC), time.Date(2030, 11, 3, 4, 0, 0, 0, time.UTC)}[i%4/2]
			}
			from := p.next(base)
			now := from.Add(time.Duration(rng.Int64N(int64(s.span))))
			want := from
			for n := p.next(want); !n.After(now); n = p.next(n) {
				want = n
			}
			if got := p.latest(from, now); !got.Equal(want) {
				t.Fatalf("%q (%s): latest(%v, %v) = %v, want %v", s.spec, s.tz, from, now, got, want)
			}
		}
	}
}

func TestSuccessorTimePolicy(t *testing.T) {
	p := mustParse(t, "* * * * *", "")
	at := epoch.Add(time.Minute) // the occurrence's scheduled time
	cases := []struct {
		name   string
		policy MissedRuns
		now    time.Time
		want   time.Time
	}{
		{"on time", RunOnce, at.Add(2 * time.Second), at.Add(time.Minute)},
		{"late by less than a period", RunOnce, at.Add(70 * time.Second), at.Add(time.Minute)},
		{"run once: the latest missed time", RunOnce, at.Add(4*time.Minute + 30*time.Second), at.Add(4 * time.Minute)},
		{"skip all: the next future time", SkipAll, at.Add(4*time.Minute + 30*time.Second), at.Add(5 * time.Minute)},
		{"skip all, late by less than a period", SkipAll, at.Add(70 * time.Second), at.Add(2 * time.Minute)},
	}
	for _, c := range cases {
		if got := successorTime(p, c.policy, at, c.now); !got.Equal(c.want) {
			t.Errorf("%s: successor of %v at %v = %v, want %v", c.name, at, c.now, got, c.want)
		}
	}
}
