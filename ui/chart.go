package ui

import (
	"github.com/quickfdb/quickfdb/internal/present"

	"fmt"
	"math"
	"strings"
	"time"
)

// Charts are inline SVG drawn on the server: no chart library, no script.

type point struct {
	At time.Time
	V  float64
}

// series is one line of a chart.
type series struct {
	Name   string
	Class  string // CSS class: its colour
	Points []point
}

// chart is what the chart template draws.
type chart struct {
	W, H    int
	Lines   []chartLine
	Max     string // label of the top of the y axis
	From    string // label of the left end of the x axis
	To      string
	Empty   bool
	Caption string
}

type chartLine struct {
	Name   string
	Class  string
	Points string // SVG polyline points
	Last   string // latest value, for the legend
}

// Chart geometry: the plot area inside the SVG's view box.
const (
	chartW, chartH = 360, 90
	padL, padB     = 4, 14
	padT           = 13 // the y axis's label sits above the plot
)

// minChartSpan is the narrowest time axis: a console that just started
// draws its first minute across the chart rather than a sliver at the edge
// of an hour.
const minChartSpan = time.Minute

// makeChart scales the series to a shared y axis over [from, to], with
// from moved up to the first sample (but at least minChartSpan before to).
func makeChart(ss []series, from, to time.Time, unit string) chart {
	peak := 0.0
	n := 0
	first := to
	for _, s := range ss {
		for _, p := range s.Points {
			peak = math.Max(peak, p.V)
			n++
			if p.At.Before(first) {
				first = p.At
			}
		}
	}
	if first.After(from) {
		from = first
	}
	if to.Sub(from) < minChartSpan {
		from = to.Add(-minChartSpan)
	}
	c := chart{W: chartW, H: chartH, From: "-" + present.Age(to.Sub(from)), To: "now"}
	if n == 0 {
		c.Empty = true
		return c
	}
	if peak <= 0 {
		peak = 1
	}
	c.Max = fmtNum(peak) + unit
	span := to.Sub(from).Seconds()
	if span <= 0 {
		span = 1
	}
	plotW, plotH := float64(chartW-padL), float64(chartH-padB-padT)
	for _, s := range ss {
		var sb strings.Builder
		for _, p := range s.Points {
			x := padL + plotW*p.At.Sub(from).Seconds()/span
			x = math.Min(math.Max(x, padL), chartW)
			y := padT + plotH*(1-p.V/peak)
			fmt.Fprintf(&sb, "%.1f,%.1f ", x, y)
		}
		last := ""
		if len(s.Points) > 0 {
			last = fmtNum(s.Points[len(s.Points)-1].V) + unit
		}
		c.Lines = append(c.Lines, chartLine{Name: s.Name, Class: s.Class, Points: strings.TrimSpace(sb.String()), Last: last})
	}
	return c
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
