package bench

import "testing"

func TestSpreadAndRatio(t *testing.T) {
	s := spreadOf([]float64{30, 10, 20})
	if s != (Spread{N: 3, Median: 20, Min: 10, Max: 30}) {
		t.Fatalf("spreadOf = %+v", s)
	}
	if m := spreadOf([]float64{4, 1, 2, 3}).Median; m != 2.5 {
		t.Fatalf("even median = %v", m)
	}
	if (spreadOf(nil) != Spread{}) {
		t.Fatal("spreadOf(nil) not zero")
	}
	r, ok := ratioOf(Spread{N: 3, Median: 100, Min: 80, Max: 120}, Spread{N: 3, Median: 50, Min: 40, Max: 60})
	if !ok || r.Median != 2 || r.Low != 80.0/60 || r.High != 3 {
		t.Fatalf("ratioOf = %+v, %v", r, ok)
	}
	if _, ok := ratioOf(Spread{Median: 1}, Spread{}); ok {
		t.Fatal("ratio over zero accepted")
	}
}

func TestCellsGroupRepetitions(t *testing.T) {
	cfg := Short()
	cfg.Modes = []Mode{Backlog}
	cfg.Variants = []string{"lanes", "zones"}
	cfg.Workers = []int{1}
	rep := Report{Config: cfg}
	for i, v := range []float64{10, 30, 20} {
		rep.Results = append(rep.Results,
			Result{Variant: "lanes", Mode: Backlog, Workers: 1, Rep: i + 1, JobsPerSec: v},
			Result{Variant: "zones", Mode: Backlog, Workers: 1, Rep: i + 1, JobsPerSec: 2 * v, Errors: 1})
	}
	cells := rep.Cells()
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	if cells[0].Variant != "lanes" || cells[0].JobsPS.Median != 20 || cells[0].JobsPS.N != 3 {
		t.Fatalf("lanes cell = %+v", cells[0])
	}
	if cells[1].JobsPS.Median != 40 || cells[1].Errors != 3 {
		t.Fatalf("zones cell = %+v", cells[1])
	}
}
