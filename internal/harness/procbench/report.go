package procbench

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/worker"
)

// A child reports on its standard output, one JSON object a line.
const (
	lineReady    = "ready"    // the claim loop is up and refused on the pause
	lineProgress = "progress" // Completed so far
	lineExit     = "exit"     // the worker stopped: final counts
)

// Line is one report line of a child.
type Line struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	Completed int64  `json:"completed"`
	// Worker and KV are set on the exit line: the worker's counts and the
	// kv operations of every transaction the child made (kv.WithCounters
	// over its database), start-up and the paused wait included.
	Worker *worker.Stats `json:"worker,omitempty"`
	KV     *kv.Stats     `json:"kv,omitempty"`
}

// ParseLine reads one report line.
func ParseLine(b []byte) (Line, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return Line{}, fmt.Errorf("procbench: report line %q: %w", b, err)
	}
	switch l.Kind {
	case lineReady, lineProgress, lineExit:
		return l, nil
	}
	return Line{}, fmt.Errorf("procbench: report line %q: unknown kind", b)
}

// lineWriter writes whole lines to w, one goroutine at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(line Line) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}
