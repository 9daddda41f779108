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
	reps          []typeDepth
	hot           zoneReport
	counts        *demoCounts
	left          countRow
	events        []string
}

// demoFrame renders one frame: a header, one line per task type with its
// top tenants, the hot tenant's zone and its lanes' load strip, the
// progress, and the latest events that fit.
func demoFrame(v demoView) string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("quick demo: %d workers, %d jobs, embedded engine  %5.1fs  (Ctrl-C stops)", v.workers, v.jobs, v.clock.Seconds())
	add("")
	add("%-8s %6s %6s %6s  %s", "TYPE", "READY", "LEASED", "SCHED", "TOP TENANTS (jobs)")
	for _, rep := range v.reps {
		var top []string
		for _, t := range rep.Tenants {
			top = append(top, fmt.Sprintf("%s %d", tenantCell(t.ItemSpace), t.total()))
		}
		add("%-8s %6s %6s %6s  %s", rep.TaskType, fmtCount(rep.Ready, rep.Exact), fmtCount(rep.Leased, rep.Exact), fmtCount(rep.Scheduled, rep.Exact), strings.Join(top, " · "))
	}
	add("")
	loads := make([]int, len(v.hot.Lanes))
	for j, l := range v.hot.Lanes {
		loads[j] = l.Ready + l.Leased
	}
	add("hot zone %s/%s: %d lanes, %d jobs  %s", v.hot.TaskType, v.hot.ItemSpace, v.hot.ZoneLanes, v.hot.Total.total(), strip(loads))
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
