package bench

import (
	"slices"
	"sync"
	"time"
)

// Percentiles summarises a distribution of waits, in milliseconds.
type Percentiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// summarise takes nearest-rank percentiles.
func summarise(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999) - 1
		i = min(max(i, 0), len(s)-1)
		return ms(s[i])
	}
	return Percentiles{N: len(s), P50: at(0.5), P99: at(0.99), P999: at(0.999), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waits collects start latencies while the measurement window is open.
type waits struct {
	mu      sync.Mutex
	open    bool
	enqToSt []time.Duration            // first starts of jobs enqueued without delay
	vestToS []time.Duration            // every start, from the time it vested
	bySpace map[string][]time.Duration // vested-to-start per item space
}

func (w *waits) setOpen(on bool) {
	w.mu.Lock()
	w.open = on
	w.mu.Unlock()
}

func (w *waits) add(m *jobMeta, start time.Time, first bool) {
	vest := time.Unix(0, m.vest.Load())
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.open {
		return
	}
	if first && !m.delayed {
		w.enqToSt = append(w.enqToSt, start.Sub(m.enq))
	}
	d := max(start.Sub(vest), 0)
	w.vestToS = append(w.vestToS, d)
	if m.space != "" {
		if w.bySpace == nil {
			w.bySpace = map[string][]time.Duration{}
		}
		w.bySpace[m.space] = append(w.bySpace[m.space], d)
	}
}
