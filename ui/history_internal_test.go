package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/worker"
)

// TestHistoryBounded: the ring keeps one span of samples per type and at
// most maxTypesTracked types, whatever is added.
func TestHistoryBounded(t *testing.T) {
	hs := newHistory(time.Hour, time.Minute)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 500 {
		hs.addDepth("a", depthSample{At: t0.Add(time.Duration(i) * time.Minute), Ready: i})
	}
	got := hs.depthOf("a")
	if len(got) != 61 || got[len(got)-1].Ready != 499 || got[0].Ready != 439 {
		t.Fatalf("ring: %d samples, first %d, last %d; want the last 61", len(got), got[0].Ready, got[len(got)-1].Ready)
	}
	for i := range maxTypesTracked + 50 {
		hs.addDepth(fmt.Sprint("t", i), depthSample{At: t0})
	}
	if len(hs.depth) != maxTypesTracked {
		t.Fatalf("%d types tracked, want at most %d", len(hs.depth), maxTypesTracked)
	}
}

// TestFleetRates: the fleet's minutes, summed over task types, one step
// per minute.
func TestFleetRates(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tp := worker.Throughput{Minutes: []worker.ThroughputMinute{
		{Minute: t0, TaskType: "a", Completed: 10, Failed: 1},
		{Minute: t0, TaskType: "b", Completed: 5},
		{Minute: t0.Add(time.Minute), TaskType: "a", Completed: 7, Failed: 2},
	}}
	now := t0.Add(time.Minute + 20*time.Second)
	c, f := fleetRates(tp, now)
	// Each minute a step from its start to its end; the last ends now.
	if len(c) != 4 || c[0].V != 15 || c[1].V != 15 || f[0].V != 1 || c[2].V != 7 || f[3].V != 2 ||
		!c[2].At.Equal(t0.Add(time.Minute)) || !c[1].At.Before(c[2].At) || !c[3].At.Equal(now) {
		t.Fatalf("rates: completed %v failed %v", c, f)
	}
}

func TestMakeChart(t *testing.T) {
	now := time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC)
	if c := makeChart(nil, now.Add(-time.Hour), now, ""); !c.Empty {
		t.Fatal("no points: want an empty chart")
	}
	c := makeChart([]series{{Name: "x", Points: []point{{now.Add(-10 * time.Second), 0}, {now, 4}}}}, now.Add(-time.Hour), now, "")
	if c.Empty || c.Max != "4" || c.From != "-1m00s" || c.Lines[0].Last != "4" {
		t.Fatalf("chart %+v", c)
	}
	// The newest point sits at the right edge, at the top.
	if pts := c.Lines[0].Points; !strings.HasSuffix(pts, "360.0,13.0") {
		t.Fatalf("points %q", pts)
	}
}
