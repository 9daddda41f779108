package main

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	line := "4242 (postgres: a) b) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 100 1000 10 18446744073709551615"
	st, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.pid != 4242 || st.ppid != 17 || st.ticks != 250+50+7+3 {
		t.Fatalf("got %+v, want pid 4242 ppid 17 ticks 310", st)
	}
	if _, err := parseProcStat("garbage"); err == nil {
		t.Fatal("no error on a line without a command field")
	}
	if _, err := parseProcStat("1 (x) S 0 1"); err == nil {
		t.Fatal("no error on a short line")
	}
}

func TestTreeCPUFindsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := treeCPU([]int{os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := treeCPU([]int{1 << 30}); err == nil {
		t.Fatal("no error for a pid that does not exist")
	}
}

func TestPercentileAndSummary(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(d, 50); p != 50 {
		t.Fatalf("p50 = %v, want 50", p)
	}
	if p := percentile(d, 99); p != 99 {
		t.Fatalf("p99 = %v, want 99", p)
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Fatal("percentile of nothing is not NaN")
	}
	s := summarize([]float64{3, math.NaN(), 1, 2})
	if s.Median != 2 || s.Min != 1 || s.Max != 3 {
		t.Fatalf("summary %+v", s)
	}
	if got := s.format("%.0f"); got != "2 (1–3)" {
		t.Fatalf("format = %q", got)
	}
	if got := summarize([]float64{5}).format("%.0f"); got != "5" {
		t.Fatalf("format of one value = %q", got)
	}
}

func TestReportJSONWithMissingFigures(t *testing.T) {
	nan := math.NaN()
	r := result{EnqueueRate: 10, DrainRate: nan, IdleP50: nan, IdleP99: nan, SteadyRate: nan, SteadyP99: nan,
		Errors: []string{"drain: boom"}}
	b, err := json.Marshal(report{Rows: []row{{System: "x", DrainRate: summarize([]float64{nan}), Runs: []result{r}}}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rows []struct {
			DrainRate struct{ Median *float64 } `json:"drain_jobs_per_s"`
			Runs      []map[string]any          `json:"runs"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	run := back.Rows[0].Runs[0]
	if back.Rows[0].DrainRate.Median != nil || run["drain_jobs_per_s"] != nil || run["enqueue_jobs_per_s"] != 10.0 {
		t.Fatalf("NaN not written as null, or a figure lost: %s", b)
	}
}
