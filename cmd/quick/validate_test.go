package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBadInput: every value a command line can get wrong gets one line
// saying what was wrong and what is wanted, with the exit status of its
// kind (2: the parser refused the line; 1: the command refused a value),
// the program's name once, and no change to the queue.
func TestBadInput(t *testing.T) {
	h := newHarness(t)
	h.ok("enqueue", "--type", "email", "--payload", "x") // a known type, so errors are about the flag
	id := h.id(1).String()
	for _, tc := range []struct {
		args []string
		want string // the whole line main prints
		code int
	}{
		{[]string{"enqueue", "--type", "email", "--max-attempts", "99999999999"},
			"quick: invalid --max-attempts 99999999999: want 0 (the queue's default) to 10000", 1},
		{[]string{"enqueue", "--type", "email", "--max-attempts", "-1"},
			"quick: invalid --max-attempts -1: want 0 (the queue's default) to 10000", 1},
		{[]string{"enqueue", "--type", "email", "--max-attempts", "99999999999999999999"},
			"quick: invalid --max-attempts 99999999999999999999: want a whole number, at most 9223372036854775807", 2},
		{[]string{"enqueue", "--type", "email", "--delay", "10000000h"},
			"quick: invalid --delay 10000000h: want a duration such as 30s, 90m or 72h, at most 2562047h0m0s", 2},
		{[]string{"enqueue", "--type", "email", "--delay", "100000h"},
			"quick: invalid --delay 100000h0m0s: at most 87600h0m0s (ten years)", 1},
		{[]string{"enqueue", "--type", "email", "--delay", "soon"},
			"quick: invalid --delay soon: want a duration such as 30s, 90m or 72h, at most 2562047h0m0s", 2},
		{[]string{"enqueue", "--type", "email", "--delay", "-1s"},
			"quick: invalid --delay -1s: want a positive duration (none: run now)", 1},
		{[]string{"enqueue", "--type", "email", "--at", "1970-01-01T00:00:00Z"},
			"quick: invalid --at 1970-01-01T00:00:00Z: 20090 days in the past; a job's run time may be at most 24h0m0s before now (a past time runs the job at once: leave --at out for that)", 1},
		{[]string{"enqueue", "--type", "email", "--at", "2025-01-01T00:00:00Z"},
			"quick: invalid --at 2025-01-01T00:00:00Z: 27h4m5s in the past", 1},
		{[]string{"enqueue", "--type", "email", "--at", "2099-01-01T00:00:00Z"},
			"quick: invalid --at 2099-01-01T00:00:00Z: at most 87600h0m0s (ten years) from now", 1},
		{[]string{"enqueue", "--type", "email", "--at", "tomorrow"},
			"quick: invalid --at tomorrow: want a time in RFC 3339 (2025-01-02T15:04:05Z)", 2},
		{[]string{"cron", "add", "--name", "n", "--spec", "@every 1m", "--type", "email", "--max-attempts", "100000"},
			"quick: invalid --max-attempts 100000: want 0 (the queue's default) to 10000", 1},
		{[]string{"jobs", "wait", id, "--timeout", "-1s"},
			"quick: invalid --timeout -1s: want a positive duration (none: wait until interrupted)", 1},
		{[]string{"workers", "--stale", "-1s"}, "quick: invalid --stale -1s: want a positive duration", 1},
		{[]string{"workers", "--stale", "0s"}, "quick: invalid --stale 0s: want a positive duration", 1},
		{[]string{"workers", "--observe", "-2s"}, "quick: invalid --observe -2s: want a positive duration", 1},
		{[]string{"dead", "requeue", "--type", "email", "--died-within", "-1h"},
			"quick: invalid --died-within -1h0m0s: want a positive duration", 1},
		{[]string{"dead", "requeue", "--type", "email", "--died-before", "-1h"},
			"quick: invalid --died-before -1h0m0s: want a positive duration", 1},
		{[]string{"dead", "purge", "--type", "email", "--older-than", "-1h", "--yes"},
			"quick: invalid --older-than -1h0m0s: want a positive duration", 1},
		{[]string{"demo", "--kill=maybe"}, "quick: invalid --kill maybe: want true or false (--kill=false)", 2},
		{[]string{"demo", "--speed", "fast"}, "quick: invalid --speed fast: want a number", 2},
		{[]string{"demo", "--seed", "-1"}, "quick: invalid --seed -1: want a whole number from 0 to 18446744073709551615", 2},
		// The library's "quick: " is not repeated after the CLI's context.
		{[]string{"jobs", "wait", id}, "quick: wait for " + id + ": job not found", 1},
		// An unknown command is a usage error like an unknown flag.
		{[]string{"frobnicate"}, `quick: unknown command "frobnicate" (see quick --help)`, 2},
		{[]string{"jobs", "frob"}, `quick: unknown command "frob" (see quick jobs --help)`, 2},
	} {
		r := h.run(tc.args...)
		if r.err == nil {
			t.Errorf("quick %s: succeeded:\n%s", strings.Join(tc.args, " "), r.stdout)
			continue
		}
		var buf bytes.Buffer
		report(&buf, r.err)
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, tc.want) {
			t.Errorf("quick %s:\n got %q\nwant %q", strings.Join(tc.args, " "), last, tc.want)
		}
		if strings.Count(last, "quick:") != 1 {
			t.Errorf("quick %s: the prefix repeats: %q", strings.Join(tc.args, " "), last)
		}
		if got := exitCode(r.err); got != tc.code {
			t.Errorf("quick %s: exit status %d, want %d", strings.Join(tc.args, " "), got, tc.code)
		}
		if tc.code == 2 && (len(lines) != 2 || !strings.HasPrefix(lines[0], "usage: quick")) {
			t.Errorf("quick %s: want a usage line, then the error: %q", strings.Join(tc.args, " "), buf.String())
		}
	}
	// Nothing was enqueued by the refused lines.
	if out := h.ok("stats"); !strings.Contains(out, "email      1 ") {
		t.Errorf("stats after refused enqueues:\n%s", out)
	}
	// A past --at within the bound runs the job now; the bounds themselves
	// are allowed.
	h.ok("enqueue", "--type", "email", "--at", "2025-01-02T03:00:00Z")
	h.ok("enqueue", "--type", "email", "--max-attempts", "10000", "--delay", "87600h")
	if out := h.ok("stats"); !strings.Contains(out, "email      2 ") {
		t.Errorf("stats after refused enqueues:\n%s", out)
	}
}
