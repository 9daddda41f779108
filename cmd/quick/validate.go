package main

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/urfave/cli/v2"
)

// Bounds on what a command line may ask of the queue. The library takes
// anything its types hold; these catch the typo (an extra zero, a minus
// sign, a year left at 1970) before it becomes a job nobody meant.
const (
	// maxAttemptsLimit bounds --max-attempts: with the default backoff a
	// job has been retried for weeks long before its 10,000th run, so a
	// larger number is a typo, not a policy.
	maxAttemptsLimit = 10_000
	// maxAhead bounds how far ahead --delay and --at may schedule a job:
	// ten years. Longer is a typo (10000000h); a job that far out belongs
	// in your own store, not in a queue.
	maxAhead = 10 * 365 * 24 * time.Hour
	// maxPast bounds how far in the past --at may be. A past time means
	// "run now" (a little skew, a time typed a minute late); a day or more
	// back is a wrong date (1970-01-01, last year), refused rather than
	// run at once.
	maxPast = 24 * time.Hour
)

// checkMaxAttempts validates a --max-attempts value (0: the queue's default).
func checkMaxAttempts(n int) error {
	if n < 0 || n > maxAttemptsLimit {
		return fmt.Errorf("invalid --max-attempts %d: want 0 (the queue's default) to %d", n, maxAttemptsLimit)
	}
	return nil
}

// checkDelay validates a --delay value.
func checkDelay(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("invalid --delay %v: want a positive duration (none: run now)", d)
	case d > maxAhead:
		return fmt.Errorf("invalid --delay %v: at most %v (ten years)", d, maxAhead)
	}
	return nil
}

// checkRunAt validates an --at time against now.
func checkRunAt(now, at time.Time) error {
	switch {
	case at.Before(now.Add(-maxPast)):
		return fmt.Errorf("invalid --at %s: %s in the past; a job's run time may be at most %v before now "+
			"(a past time runs the job at once: leave --at out for that)", at.Format(time.RFC3339), longAgo(now.Sub(at)), maxPast)
	case at.After(now.Add(maxAhead)):
		return fmt.Errorf("invalid --at %s: at most %v (ten years) from now", at.Format(time.RFC3339), maxAhead)
	}
	return nil
}

// longAgo is a past duration in the unit a reader checks a date by: days
// beyond two days, else hours, minutes and seconds.
func longAgo(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int64(d/(24*time.Hour)))
	}
	return d.Round(time.Second).String()
}

// checkNonNegative validates a duration flag whose zero means "not set":
// a negative one is a typo, refused rather than read as unset.
func checkNonNegative(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("invalid --%s %v: want a positive duration", name, d)
	}
	return nil
}

// flagParseRE matches the errors Go's flag package returns for a value it
// cannot parse: `invalid value "10000000h" for flag -delay: parse error`.
// Bool flags say `invalid boolean value "maybe" for -kill: parse error`.
var flagParseRE = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

// flagValueError rewrites a flag package parse error into one that says
// what the flag wants, in the CLI's words ("invalid --delay 10000000h: not
// a duration ..."); other errors come back as they are.
func flagValueError(c *cli.Context, err error) error {
	m := flagParseRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name := m[1], m[2]
	var fl cli.Flag
	if c != nil {
		fl = findFlag(c, name)
	}
	want := "a valid value"
	switch fl.(type) {
	case *cli.DurationFlag:
		want = fmt.Sprintf("a duration such as 30s, 90m or 72h, at most %v", time.Duration(math.MaxInt64).Truncate(time.Hour))
	case *cli.IntFlag, *cli.Int64Flag:
		want = fmt.Sprintf("a whole number, at most %d", math.MaxInt64)
	case *cli.Uint64Flag, *cli.UintFlag:
		want = fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64))
	case *cli.Float64Flag:
		want = "a number"
	case *cli.BoolFlag:
		want = "true or false (--" + name + "=false)"
	case *cli.TimestampFlag:
		want = "a time in RFC 3339 (2025-01-02T15:04:05Z)"
	}
	return fmt.Errorf("invalid --%s %s: want %s", name, value, want)
}

// findFlag returns the flag named name among the flags of c's command and
// its parents.
func findFlag(c *cli.Context, name string) cli.Flag {
	for _, cc := range c.Lineage() {
		var fs []cli.Flag
		switch {
		case cc.Command != nil && cc.Command.Name != "":
			fs = cc.Command.Flags
		case cc.App != nil:
			fs = cc.App.Flags
		}
		for _, f := range fs {
			for _, n := range f.Names() {
				if n == name {
					return f
				}
			}
		}
	}
	return nil
}
