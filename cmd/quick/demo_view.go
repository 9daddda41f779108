package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The terminal view of the demo fits a classic 80×24 terminal: every line
// is cut at demoCols, and the frame has at most demoRows lines (one row
// stays free for the cursor).
const (
	demoCols = 80
	demoRows = 23
)

// demoView is what one frame of the demo shows.
type demoView struct {
	workers, jobs int
	clock, real   time.Duration
	bound         time.Duration
	rate          float64
	reps          []laneReport
	counts        *demoCounts
	left          laneRow
	events        []string
}

// demoFrame renders one frame: a header, one line per task type with its
// lanes' load strip, the progress, and the latest events that fit.
func demoFrame(v demoView) string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("quick demo: %d workers, %d jobs, embedded engine  %5.1fs  (Ctrl-C stops)", v.workers, v.jobs, v.clock.Seconds())
	add("")
	add("%-8s %6s %6s %6s  %s", "TYPE", "READY", "LEASED", "SCHED", "LOAD BY LANE (ready + leased)")
	for _, rep := range v.reps {
		loads := make([]int, len(rep.Lanes))
		for j, l := range rep.Lanes {
			loads[j] = l.Ready + l.Leased
		}
		t := rep.Total
		add("%-8s %6s %6s %6s  %s", rep.TaskType, fmtCount(t.Ready, t.Exact), fmtCount(t.Leased, t.Exact), fmtCount(t.Scheduled, t.Exact), strip(loads))
	}
	add("")
	add("%s", progressBar(v.counts, v.jobs))
	clock := "clock ×1"
	if v.rate > 1 {
		clock = fmt.Sprintf("clock ×%g: nothing ready, fast-forwarding", v.rate)
	}
	add("%s · %s", leftLine(v.left), clock)
	add("")
	room := demoRows - len(lines)
	for _, e := range v.events[max(0, len(v.events)-room):] {
		add("%s", e)
	}
	for i, l := range lines {
		lines[i] = cut(l, demoCols)
	}
	return strings.Join(lines, "\n") + "\n"
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
