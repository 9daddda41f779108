package ui

import (
	"context"
	"sync"
	"time"
)

// The library keeps no history in the database (no completion log, no
// counters over time), so the overview's charts come from samples this
// handler takes itself, in memory, for the last hour: queue depth and dead
// letters per task type from the library's counts, and, when Config.Workers
// names the workers in this process, their completions and failures. A
// console restarted starts its charts afresh.

// depthSample is one task type's counts at one time.
type depthSample struct {
	At                       time.Time
	Ready, Leased, Scheduled int
	Dead                     int64
	Exact                    bool
}

// procSample is the in-process workers' cumulative counters at one time.
type procSample struct {
	At                        time.Time
	Completed, Failed, Claims int64
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
	proc  []procSample
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

func (hs *history) addProc(s procSample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.proc = append(hs.proc, s)
	if len(hs.proc) > hs.n {
		hs.proc = append(hs.proc[:0], hs.proc[len(hs.proc)-hs.n:]...)
	}
}

func (hs *history) depthOf(t string) []depthSample {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]depthSample(nil), hs.depth[t]...)
}

func (hs *history) procs() []procSample {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]procSample(nil), hs.proc...)
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
// letters' counter); and the in-process workers' counters. The
// sampler calls it every SampleEvery; tests call it directly.
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
	if h.cfg.Workers != nil {
		var s procSample
		s.At = h.now()
		for _, w := range h.cfg.Workers() {
			st := w.Stats()
			s.Completed += st.Completed
			s.Failed += st.Failed
			s.Claims += st.Claimed
		}
		h.hist.addProc(s)
	}
	return nil
}

// procRates turns cumulative samples into per-minute rates between
// consecutive samples.
func procRates(ps []procSample) (completed, failed []point) {
	for i := 1; i < len(ps); i++ {
		dt := ps[i].At.Sub(ps[i-1].At).Minutes()
		if dt <= 0 {
			continue
		}
		completed = append(completed, point{ps[i].At, float64(max(0, ps[i].Completed-ps[i-1].Completed)) / dt})
		failed = append(failed, point{ps[i].At, float64(max(0, ps[i].Failed-ps[i-1].Failed)) / dt})
	}
	return completed, failed
}
