package worker

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// A presence record that cannot be cleared at a graceful stop (the database
// times the clear out, 1031) is logged, not a failed shutdown: the record
// goes stale and the purge-presence duty clears it. The chaos run on memkv
// counted such a Run error as a violation about 1 run in 10.
func TestStopWithAPresenceClearThatFails(t *testing.T) {
	clk := clock.NewFake(epoch)
	raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk})
	faulty := kv.WithFaults(raw, kv.Faults{Seed: 1, TimedOutNotCommitted: 1})
	faulty.SetEnabled(false)
	e := newEnvWith(t, faulty, space, clk, zonesOptions())
	w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
		if err := RegisterRaw(w, "presence", func(ctx context.Context, j *RawJob) error { return nil }, HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	h := e.start(w)
	e.waitFor("the presence record", func() bool {
		ps, err := ListWorkers(e.ctx, e.q, 10)
		return err == nil && len(ps) == 1
	})
	faulty.SetEnabled(true) // every commit from now on times out, unapplied
	e.stop(w, h)
	if h.err != nil {
		t.Fatalf("Run = %v, want nil: a presence record left behind is purged later", h.err)
	}
	faulty.SetEnabled(false)
	ps, err := ListWorkers(e.ctx, e.q, 10)
	if err != nil || len(ps) != 1 {
		t.Fatalf("ListWorkers = %v, %v; want the record the stop could not clear", ps, err)
	}
}
