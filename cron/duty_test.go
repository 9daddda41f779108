package cron

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/worker"
)

// Workers running cron handlers repair broken chains by themselves, one of
// them every period (the cron-repair duty): nobody calls Repair.
func TestWorkersRepairBrokenChains(t *testing.T) {
	e := newEnv(t, nil)
	e.register(Schedule{Name: "b", Spec: "*/5 * * * *", TaskType: "tick"})
	if err := e.q.Cancel(e.ctx, e.entry("b").NextID); err != nil {
		t.Fatal(err)
	}
	if e.entry("b").Alive {
		t.Fatal("broken chain listed alive")
	}
	e.startWorker(func(context.Context, Occurrence) error { return nil })
	recorded := func() bool {
		sts, err := worker.DutyStates(e.ctx, e.q)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Name == "cron-repair" && st.Runs > 0 && st.Last.Count == 1 {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for !recorded() {
		if time.Now().After(deadline) {
			t.Fatalf("no cron-repair pass restored the chain by fake time %v", e.clk.Now())
		}
		select {
		case <-e.clk.Changed():
		case <-time.After(2 * time.Millisecond):
		}
		if e.clk.Now().Sub(epoch) < 10*time.Minute {
			e.clk.Advance(5 * time.Second)
		}
	}
	if !e.entry("b").Alive {
		t.Fatal("a repair pass recorded, but the chain is still broken")
	}
}
