package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// SVG plots throughput and claim conflict rate against worker count, one
// line per variant, one row of panels per mode. It is hand-written SVG so
// the harness needs no plotting dependency.
func (r Report) SVG() string {
	// One point per cell: the median over its repetitions.
	var meds []Result
	for _, c := range r.Cells() {
		meds = append(meds, Result{Mode: c.Mode, Variant: c.Variant, Workers: c.Workers, JobsPerSec: c.JobsPS.Median, ConflictRate: c.Conflict.Median})
	}
	r.Results = meds
	const (
		pw, ph     = 440.0, 280.0 // panel size
		ml, mr     = 70.0, 20.0   // panel margins
		mt, mb     = 40.0, 45.0
		legendH    = 30.0
		titleH     = 30.0
		panelsWide = 2
	)
	colors := []string{"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b"}
	modes := r.Config.Modes
	W := pw * panelsWide
	H := titleH + legendH + ph*float64(len(modes))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" text-anchor="middle" font-size="14">quickbench: %s</text>`+"\n", W/2, html.EscapeString(r.Engine))
	for i, v := range r.Config.Variants {
		x := 20 + float64(i)*W/float64(len(r.Config.Variants))
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			x, titleH+12, x+25, titleH+12, c, x+30, titleH+16, html.EscapeString(v))
	}
	metrics := []struct {
		title string
		get   func(Result) float64
		fmtY  string
	}{
		{"jobs/s", func(r Result) float64 { return r.JobsPerSec }, "%.0f"},
		{"claim conflicts per claim commit", func(r Result) float64 { return r.ConflictRate }, "%.2f"},
	}
	xs := r.Config.Workers
	for row, mode := range modes {
		for col, m := range metrics {
			ox, oy := float64(col)*pw, titleH+legendH+float64(row)*ph
			x0, x1 := ox+ml, ox+pw-mr
			y0, y1 := oy+ph-mb, oy+mt
			ymax := 0.0
			for _, res := range r.Results {
				if res.Mode == mode {
					ymax = math.Max(ymax, m.get(res))
				}
			}
			ymax = niceMax(ymax)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-size="13">%s — %s</text>`+"\n", (x0+x1)/2, oy+mt-14, mode, m.title)
			fmt.Fprintf(&b, `<path d="M%.1f %.1fV%.1fH%.1f" fill="none" stroke="black"/>`+"\n", x0, y1, y0, x1)
			for t := 0; t <= 4; t++ {
				y := y0 - (y0-y1)*float64(t)/4
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">`+m.fmtY+`</text>`+"\n",
					x0, y, x1, y, x0-5, y+4, ymax*float64(t)/4)
			}
			xpos := func(i int) float64 {
				if len(xs) == 1 {
					return (x0 + x1) / 2
				}
				return x0 + 20 + (x1-x0-40)*float64(i)/float64(len(xs)-1)
			}
			for i, w := range xs {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", xpos(i), y0+16, w)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">workers</text>`+"\n", (x0+x1)/2, y0+34)
			for vi, v := range r.Config.Variants {
				var pts []string
				for i, w := range xs {
					for _, res := range r.Results {
						if res.Mode == mode && res.Variant == v && res.Workers == w {
							y := y0 - (y0-y1)*m.get(res)/ymax
							pts = append(pts, fmt.Sprintf("%.1f,%.1f", xpos(i), y))
						}
					}
				}
				c := colors[vi%len(colors)]
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
				for _, p := range pts {
					xy := strings.Split(p, ",")
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], c)
				}
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceMax rounds an axis maximum up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
