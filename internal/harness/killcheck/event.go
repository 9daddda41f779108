package killcheck

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/quickfdb/quickfdb/quick"
)

// EventKind names what a worker process reports on its standard output.
type EventKind string

// The events a worker reports, one line each (Event.String).
const (
	EventReady      EventKind = "ready"      // the worker registered and is about to run
	EventStart      EventKind = "start"      // a run began after the checkpointed Step
	EventCheckpoint EventKind = "checkpoint" // step Step was checkpointed (committed)
	EventHang       EventKind = "hang"       // the run blocks after checkpoint Step: kill now
	EventDone       EventKind = "done"       // the run completed the job (CompleteWith committed)
	EventEnqueued   EventKind = "enqueued"   // the producer inserted the job
)

// Event is one line of a worker's or producer's report.
type Event struct {
	Kind    EventKind
	Worker  string
	Job     quick.ID
	Attempt int
	Step    int
}

// prefix starts every event line, so the lines stand out from logs.
const prefix = "KC"

// String is the event's line: KC kind worker job attempt step.
func (e Event) String() string {
	w := e.Worker
	if w == "" {
		w = "-"
	}
	return fmt.Sprintf("%s %s %s %s %d %d", prefix, e.Kind, w, e.Job, e.Attempt, e.Step)
}

// ErrNotEvent is returned by ParseEvent for a line that is no event.
var ErrNotEvent = errors.New("killcheck: not an event line")

// ParseEvent reads a line written by Event.String.
func ParseEvent(line string) (Event, error) {
	f := strings.Fields(line)
	if len(f) != 6 || f[0] != prefix {
		return Event{}, fmt.Errorf("%w: %q", ErrNotEvent, line)
	}
	id, err := quick.ParseID(f[3])
	if err != nil {
		return Event{}, fmt.Errorf("%w: %q: %w", ErrNotEvent, line, err)
	}
	attempt, err1 := strconv.Atoi(f[4])
	step, err2 := strconv.Atoi(f[5])
	if err := errors.Join(err1, err2); err != nil {
		return Event{}, fmt.Errorf("%w: %q: %w", ErrNotEvent, line, err)
	}
	w := f[2]
	if w == "-" {
		w = ""
	}
	switch k := EventKind(f[1]); k {
	case EventReady, EventStart, EventCheckpoint, EventHang, EventDone, EventEnqueued:
		return Event{Kind: k, Worker: w, Job: id, Attempt: attempt, Step: step}, nil
	default:
		return Event{}, fmt.Errorf("%w: unknown kind %q", ErrNotEvent, f[1])
	}
}

// Progress is what one worker process reported about each job: the last
// step it checkpointed, and whether it reported the job done.
type Progress struct {
	Ready          bool
	LastCheckpoint map[quick.ID]int
	Started        map[quick.ID]bool
	Done           map[quick.ID]bool
	Hang           map[quick.ID]int // jobs blocked after this checkpointed step
	Enqueued       []quick.ID       // the producer's jobs, in order
}

// Clone returns a deep copy of p.
func (p *Progress) Clone() *Progress {
	c := NewProgress()
	c.Ready = p.Ready
	c.Enqueued = slices.Clone(p.Enqueued)
	maps.Copy(c.LastCheckpoint, p.LastCheckpoint)
	maps.Copy(c.Started, p.Started)
	maps.Copy(c.Done, p.Done)
	maps.Copy(c.Hang, p.Hang)
	return c
}

// NewProgress returns an empty Progress.
func NewProgress() *Progress {
	return &Progress{LastCheckpoint: map[quick.ID]int{}, Started: map[quick.ID]bool{}, Done: map[quick.ID]bool{}, Hang: map[quick.ID]int{}}
}

// Add notes one event.
func (p *Progress) Add(e Event) {
	switch e.Kind {
	case EventReady:
		p.Ready = true
	case EventEnqueued:
		p.Enqueued = append(p.Enqueued, e.Job)
	case EventStart:
		p.Started[e.Job] = true
		p.LastCheckpoint[e.Job] = max(p.LastCheckpoint[e.Job], e.Step)
	case EventCheckpoint:
		p.LastCheckpoint[e.Job] = max(p.LastCheckpoint[e.Job], e.Step)
	case EventHang:
		p.LastCheckpoint[e.Job] = max(p.LastCheckpoint[e.Job], e.Step)
		p.Hang[e.Job] = e.Step
	case EventDone:
		p.Done[e.Job] = true
	}
}

// Unfinished returns the jobs this worker started and did not report done,
// with the last step it reported checkpointed (or resumed from).
func (p *Progress) Unfinished() map[quick.ID]int {
	out := map[quick.ID]int{}
	for id := range p.Started {
		if !p.Done[id] {
			out[id] = p.LastCheckpoint[id]
		}
	}
	return out
}
