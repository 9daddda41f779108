package ui

import (
	"context"
	"sync"
	"time"
)

// The library keeps no history of queue depth in the database, so the
// overview's depth charts come from samples this handler takes itself, in
// memory, for the last hour: queue depth and dead letters per task type
// from the library's counts. A console restarted starts them afresh.
// Throughput is the fleet's, from the database (worker.ReadThroughput).

// depthSample is one task type's counts at one time.
type depthSample struct {
	At                       time.Time
	Ready, Leased, Scheduled int
	Dead                     int64
	Exact                    bool
}

// maxTypesTracked bounds the history's memory and each sample's reads,
// whatever the number of task types: the pages show at most this many types
// too.
const maxTypesTracked = 200

// history is a ring of samples per task type, one hour long.
type history struct {
	mu    sync.Mutex
	n     int // samples kept per series
	every time.Duration
	depth map[string][]depthSample
}

func newHistory(span, every time.Duration) *history {
	return &history{n: int(span/every) + 1, every: every, depth: map[string][]depthSample{}}
}

func (hs *history) addDepth(t string, s depthSample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	ring, ok := hs.depth[t]
	if !ok && len(hs.depth) >= maxTypesTracked {
		return
	}
	ring = append(ring, s)
	if len(ring) > hs.n {
		ring = append(ring[:0], ring[len(ring)-hs.n:]...)
	}
	hs.depth[t] = ring
}

func (hs *history) depthOf(t string) []depthSample {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]depthSample(nil), hs.depth[t]...)
}

// sampleLoop takes a sample now and then every SampleEvery until ctx ends.
func (h *Handler) sampleLoop(ctx context.Context) {
	defer close(h.done)
	for {
		if err := h.Sample(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("ui: history sample", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-h.clk.After(h.cfg.SampleEvery):
		}
	}
}

// Sample records one history sample: per task type, its counts across its
// tenants' zones (quick.Queue.Depth, at most Budget keys, and the dead
// letters' counter). The sampler calls it every SampleEvery; tests call it
// directly.
func (h *Handler) Sample(ctx context.Context) error {
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		return err
	}
	for _, t := range types[:min(len(types), maxTypesTracked)] {
		c, err := h.typeCounts(ctx, t, 1)
		if err != nil {
			return err
		}
		h.hist.addDepth(t, depthSample{At: c.At, Ready: c.Ready, Leased: c.Leased, Scheduled: c.Scheduled, Dead: c.Dead, Exact: c.Exact})
	}
	return nil
}
