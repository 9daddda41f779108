package worker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// EventKind is what happened to a job that a run of this worker finished.
// Kinds are bits, so a set of them is one value.
type EventKind uint8

// The event kinds. A job's run ends in exactly one of them, once the
// worker knows its outcome is in the database (its ack committed, or its
// CompleteWith / DeadLetterWith transaction did). A run that ends another
// way (its lease lost, handed back by a stop, an ack that failed to commit)
// sends no event: the job runs again, and that run's outcome is the event.
const (
	// EventCompleted: the handler returned nil (or CompleteWith committed).
	EventCompleted EventKind = 1 << iota
	// EventFailed: the handler failed and the job will run again after
	// its backoff.
	EventFailed
	// EventSnoozed: the handler returned Snooze(d); Event.Delay is d.
	EventSnoozed
	// EventCancelled: the handler returned Cancel(reason).
	EventCancelled
	// EventDeadLettered: the job went to the dead letters: its last
	// attempt failed, its arguments did not decode, or DeadLetterWith.
	EventDeadLettered

	eventAll = EventCompleted | EventFailed | EventSnoozed | EventCancelled | EventDeadLettered
)

func (k EventKind) String() string {
	switch k {
	case EventCompleted:
		return "completed"
	case EventFailed:
		return "failed"
	case EventSnoozed:
		return "snoozed"
	case EventCancelled:
		return "cancelled"
	case EventDeadLettered:
		return "dead_lettered"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one finished run of a job, as this worker saw it.
type Event struct {
	Kind      EventKind
	ID        quick.ID
	TaskType  string
	ItemSpace string
	// Cluster is the worker's cluster in a Group (Config.Cluster), or "".
	Cluster string
	Attempt int // the run's attempt, from 1
	// Error is the handler's error (failed, dead-lettered) or the
	// cancellation's reason; empty for completed and snoozed runs.
	Error string
	// Delay is the snooze (snoozed) or the handler's Backoff (failed; zero
	// when the queue's backoff applies).
	Delay time.Duration
	// At is when the worker learned the outcome (its clock).
	At time.Time
	// Wait is from the job vesting (quick.Lease.VestedAt) to its claim;
	// Run from the handler's start to its return; Ack from its return to
	// the outcome committed. Run and Ack are zero for a job whose handler
	// never returned (CompleteWith and DeadLetterWith end it inside).
	Wait, Run, Ack time.Duration
}

// DefaultEventBuffer is a subscription's buffer unless SubscribeConfig
// says otherwise.
const DefaultEventBuffer = 1000

// SubscribeConfig configures a subscription.
type SubscribeConfig struct {
	// Kinds are the events wanted; none means every kind.
	Kinds []EventKind
	// Buffer is how many events wait for the subscriber before new ones
	// are dropped (counted in Stats.EventsDropped). Default
	// DefaultEventBuffer; at most MaxEventBuffer.
	Buffer int
}

// MaxEventBuffer bounds a subscription's buffer: the worker holds at most
// this many undelivered events per subscriber.
const MaxEventBuffer = 1 << 20

// Subscribe returns a channel of the worker's job events of the given
// kinds (none: every kind) and a function that ends the subscription and
// closes the channel. It is SubscribeConfig with the default buffer; an
// unknown kind matches nothing. The channel is also closed when Run has
// returned.
//
// Events are sent without waiting: a subscriber that does not keep up
// loses the events that find its buffer full (Stats.EventsDropped counts
// them), and no job, ack or claim ever waits for a subscriber.
func (w *Worker) Subscribe(kinds ...EventKind) (<-chan Event, func()) {
	ch, cancel, _ := w.subscribe(SubscribeConfig{Kinds: kinds}, false)
	return ch, cancel
}

// SubscribeConfig is Subscribe with a chosen buffer; it refuses unknown
// kinds and a buffer out of range (ErrInvalidConfig).
func (w *Worker) SubscribeConfig(c SubscribeConfig) (<-chan Event, func(), error) {
	return w.subscribe(c, true)
}

func (w *Worker) subscribe(c SubscribeConfig, strict bool) (<-chan Event, func(), error) {
	var mask EventKind
	for _, k := range c.Kinds {
		if k == 0 || k&^eventAll != 0 {
			if strict {
				return nil, nil, fmt.Errorf("%w: unknown event kind %d", ErrInvalidConfig, uint8(k))
			}
			continue
		}
		mask |= k
	}
	if len(c.Kinds) == 0 {
		mask = eventAll
	}
	switch {
	case c.Buffer < 0 || c.Buffer > MaxEventBuffer:
		if strict {
			return nil, nil, fmt.Errorf("%w: event buffer %d outside [0, %d]", ErrInvalidConfig, c.Buffer, MaxEventBuffer)
		}
		c.Buffer = DefaultEventBuffer
	case c.Buffer == 0:
		c.Buffer = DefaultEventBuffer
	}
	s := &subscriber{ch: make(chan Event, c.Buffer), kinds: mask}
	w.events.add(s)
	return s.ch, func() { w.events.remove(s) }, nil
}

// subscriber is one subscription.
type subscriber struct {
	ch    chan Event
	kinds EventKind
}

// eventHub fans the worker's events out to its subscribers. A job that
// finishes while nobody subscribes pays one atomic load (n): no Event is
// built.
type eventHub struct {
	n       atomic.Int32
	dropped atomic.Int64

	mu     sync.RWMutex // sends hold it for reading; add, remove and close for writing
	subs   []*subscriber
	closed bool
}

func (h *eventHub) add(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.ch)
		return
	}
	h.subs = append(h.subs, s)
	h.n.Store(int32(len(h.subs)))
}

func (h *eventHub) remove(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.subs {
		if x == s {
			h.subs = append(h.subs[:i:i], h.subs[i+1:]...)
			h.n.Store(int32(len(h.subs)))
			close(s.ch)
			return
		}
	}
}

// close ends every subscription (Run has returned: no more events).
func (h *eventHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, s := range h.subs {
		close(s.ch)
	}
	h.subs = nil
	h.n.Store(0)
}

// wanted tells whether any subscriber may take an event: when not, the
// caller builds none.
func (h *eventHub) wanted() bool { return h.n.Load() > 0 }

// publish hands ev to every subscriber of its kind without waiting: a full
// buffer drops it (counted). The sends hold the read lock, so a remove
// cannot close a channel under one; none of them blocks.
func (h *eventHub) publish(ev Event) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, s := range h.subs {
		if s.kinds&ev.Kind == 0 {
			continue
		}
		if mutant.On("worker.event-blocking") {
			// Deliberate break (internal/mutant): a slow subscriber holds
			// up the job's ack.
			s.ch <- ev
			continue
		}
		select {
		case s.ch <- ev:
		default:
			h.dropped.Add(1)
		}
	}
}

// EventsDropped is how many events subscribers lost to a full buffer since
// New (also in Stats). A metrics exporter can read it as a counter.
func (w *Worker) EventsDropped() int64 { return w.events.dropped.Load() }

// emit sends the event of a run that ended with kind, if anybody listens.
// The caller holds st.mu.
func (st *jobState) emit(kind EventKind, errText string, delay time.Duration) {
	w := st.r.w
	if !w.events.wanted() {
		return
	}
	now := w.clk.Now()
	ev := Event{
		Kind: kind, ID: st.first.ID, TaskType: st.r.taskType, ItemSpace: st.first.ItemSpace, Cluster: w.cfg.Cluster,
		Attempt: st.first.Attempt, Error: errText, Delay: delay, At: now,
		Wait: max(st.claimed.Sub(st.first.VestedAt), 0),
	}
	if !st.returned.IsZero() {
		ev.Run = max(st.returned.Sub(st.started), 0)
		ev.Ack = max(now.Sub(st.returned), 0)
	}
	w.events.publish(ev)
}

// eventOf is the event kind of an ack that committed, and whether there is
// one (a release has none).
func eventOf(kind quick.AckKind, res quick.AckResult) (EventKind, bool) {
	switch kind {
	case quick.AckComplete:
		return EventCompleted, true
	case quick.AckFail:
		if res.Dead {
			return EventDeadLettered, true
		}
		return EventFailed, true
	case quick.AckSnooze:
		return EventSnoozed, true
	case quick.AckDeadLetter:
		return EventDeadLettered, true
	case quick.AckCancel:
		return EventCancelled, true
	}
	return 0, false
}
