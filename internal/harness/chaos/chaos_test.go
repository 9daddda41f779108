package chaos

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// testConfig is a run of a few seconds on memkv.
func testConfig() Config {
	c := Short()
	c.Workers, c.Concurrency, c.Producers, c.Rate, c.Batch = 4, 4, 2, 150, 10
	c.JobMs, c.CkptSteps = 2, 3
	c.CronSpec = "@every 1s"
	c.Baseline, c.Duration, c.FaultEvery = time.Second, 3*time.Second, 500*time.Millisecond
	c.TxTimeout, c.DrainTimeout = 5*time.Second, 2*time.Minute
	// At least 20 transactions (200 jobs), however starved the producers
	// are: the test checks that the run exercised enough, which must not
	// depend on the machine's speed.
	c.MinBatches, c.MaxOvertime = 20, 2*time.Minute
	return c
}

// The whole chaos run on memkv: producers, four workers (goroutines),
// cron chains and bursts of injected commit faults; the checker must find
// no violation, and the run must have exercised what it checks.
func TestChaosInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of several seconds")
	}
	var out io.Writer = io.Discard
	if testing.Verbose() {
		out = os.Stderr
	}
	env, stats, closeDB := MemEnv(DefaultMemFaults(), out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer closeDB()
	rep, err := Run(context.Background(), testConfig(), env)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verdict
	var sb strings.Builder
	rep.Write(&sb)
	t.Log("\n" + sb.String())
	if !v.OK() {
		t.Fatalf("%d violations:\n%s", len(v.Violations), strings.Join(v.Violations, "\n"))
	}
	st := stats()
	if v.Jobs < 100 || v.Completed == 0 || v.CronOccurrences == 0 || len(rep.Faults) == 0 || st.UnknownCommitted == 0 || st.UnknownNotCommitted == 0 {
		t.Fatalf("the run exercised too little: %d jobs, %d completed, %d cron occurrences, %d faults, injected %+v", v.Jobs, v.Completed, v.CronOccurrences, len(rep.Faults), st)
	}
}
