package bench

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	for in, want := range map[string]Dist{
		"fixed:5ms":     {Kind: "fixed", Mean: 5 * time.Millisecond},
		"uniform:1s":    {Kind: "uniform", Mean: time.Second},
		"exp:20ms":      {Kind: "exponential", Mean: 20 * time.Millisecond},
		"exponential:0": {Kind: "exponential"},
	} {
		got, err := ParseDist(in)
		if err != nil || got != want {
			t.Errorf("ParseDist(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "exp", "gauss:1s", "fixed:-1s", "fixed:x"} {
		if _, err := ParseDist(bad); err == nil {
			t.Errorf("ParseDist(%q) accepted", bad)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	d := Dist{Kind: "uniform", Mean: time.Millisecond}
	for range 1000 {
		if x := d.Draw(r); x < 0 || x > 2*time.Millisecond {
			t.Fatalf("uniform draw %v outside [0, 2 ms]", x)
		}
	}
}

func TestSummarise(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 1000; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := summarise(ds)
	if p.N != 1000 || p.P50 != 500 || p.P99 != 990 || p.P999 != 999 || p.Max != 1000 {
		t.Fatalf("summarise = %+v", p)
	}
	if (summarise(nil) != Percentiles{}) {
		t.Fatal("summarise(nil) not zero")
	}
}

func TestValidateAndSVG(t *testing.T) {
	c := Short()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Variants = []string{"nope"}
	if err := c.Validate(); err == nil {
		t.Fatal("unknown variant accepted")
	}
	rep := Report{Config: Short(), Results: []Result{
		{Variant: "lanes", Mode: Backlog, Workers: 1, JobsPerSec: 10, ConflictRate: 0},
		{Variant: "lanes", Mode: Backlog, Workers: 16, JobsPerSec: 100, ConflictRate: 0.1},
	}}
	svg := rep.SVG()
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "<polyline") || !strings.HasSuffix(svg, "</svg>\n") {
		t.Fatalf("svg: %s", svg)
	}
}
