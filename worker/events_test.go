package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// eventsHandler ends each job as its payload says; "ok" takes 3 s on the
// fake clock.
func eventsHandler(e *env) Handler[[]byte] {
	return func(ctx context.Context, j *RawJob) error {
		switch string(j.Args) {
		case "ok":
			e.clk.Advance(3 * time.Second)
			return nil
		case "fail":
			return errors.New("boom")
		case "snooze":
			return Snooze(time.Hour)
		case "cancel":
			return Cancel("not wanted")
		case "with":
			return j.CompleteWith(ctx, func(kv.Transaction) error { return nil })
		}
		return errors.New("unknown payload")
	}
}

// Every way a run ends reaches a subscriber as its event, with the job's
// ID, task type, item space, attempt, error and durations.
func TestEventsEachKindDelivered(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "ev", eventsHandler(e), HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	events, cancel := w.Subscribe()
	defer cancel()
	ok := e.enqueue(quick.NewJob{TaskType: "ev", Payload: []byte("ok"), ItemSpace: "acme"})
	h := e.start(w)
	ev := recv(e, "the completion", events)
	want := Event{Kind: EventCompleted, ID: ok[0].ID, TaskType: "ev", ItemSpace: "acme", Attempt: 1, At: epoch.Add(3 * time.Second), Run: 3 * time.Second}
	if ev != want {
		t.Fatalf("completed event %+v, want %+v", ev, want)
	}

	ids := map[string]quick.ID{}
	for _, p := range []string{"fail", "snooze", "cancel", "with"} {
		ids[p] = e.enqueue(quick.NewJob{TaskType: "ev", Payload: []byte(p), MaxAttempts: 2})[0].ID
	}
	got := map[quick.ID]Event{}
	for len(got) < 4 {
		ev := recv(e, "the events of the four jobs", events)
		got[ev.ID] = ev
	}
	check := func(p string, kind EventKind, errText string, delay time.Duration) {
		t.Helper()
		ev := got[ids[p]]
		if ev.Kind != kind || ev.Error != errText || ev.Delay != delay || ev.Attempt != 1 || ev.TaskType != "ev" {
			t.Fatalf("%s: event %+v, want %v with error %q, delay %v", p, ev, kind, errText, delay)
		}
	}
	check("fail", EventFailed, "boom", 0)
	check("snooze", EventSnoozed, "", time.Hour)
	check("cancel", EventCancelled, "not wanted", 0)
	check("with", EventCompleted, "", 0)

	// The failed job's second attempt is its last: dead-lettered.
	e.settle(w)
	e.step(time.Minute, 10*time.Second, w)
	ev = recv(e, "the dead letter", events)
	if ev.Kind != EventDeadLettered || ev.ID != ids["fail"] || ev.Attempt != 2 || ev.Error != "boom" {
		t.Fatalf("dead-letter event %+v", ev)
	}
	if err := e.stop(w, h); err != nil {
		t.Fatal(err)
	}
	if _, open := <-events; open {
		t.Fatal("the subscription's channel is open after Run returned")
	}
	if s := w.Stats(); s.EventsDropped != 0 {
		t.Fatalf("%d events dropped", s.EventsDropped)
	}
}

// A subscriber that reads nothing holds up no ack: its buffer fills, the
// rest of its events are dropped and counted, and a subscriber to other
// kinds gets none of them.
func TestEventsSlowSubscriberDropsAndNeverDelaysAcks(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "ev", func(context.Context, *RawJob) error { return nil }, HandlerOptions{Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
	})
	slow, cancelSlow, err := w.SubscribeConfig(SubscribeConfig{Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Not cancelled: Run's end closes it (a cancel here would wait on the
	// mutant's blocked send).
	failures, _ := w.Subscribe(EventFailed, EventDeadLettered)
	const n = 20
	for range n {
		e.enqueue(quick.NewJob{TaskType: "ev"})
	}
	e.start(w)
	// Under the worker.event-blocking mutant the acker waits on this
	// subscriber: reading it at the end lets the worker stop.
	t.Cleanup(func() {
		go func() {
			for range slow {
			}
		}()
	})
	// An ack counts its job before it sends the event: wait for both.
	e.waitFor("every job completed and its event sent", func() bool {
		s := w.Stats()
		return s.Completed == n && s.EventsDropped >= n-2
	})
	if d := w.Stats().EventsDropped; d != n-2 {
		t.Fatalf("%d events dropped, want %d (a buffer of 2)", d, n-2)
	}
	if d := w.EventsDropped(); d != n-2 {
		t.Fatalf("EventsDropped() %d, want %d", d, n-2)
	}
	for range 2 {
		if ev := <-slow; ev.Kind != EventCompleted {
			t.Fatalf("buffered event %+v", ev)
		}
	}
	select {
	case ev := <-failures:
		t.Fatalf("a subscriber of failures got %+v", ev)
	default:
	}
	cancelSlow()
	if _, open := <-slow; open {
		t.Fatal("cancel left the channel open")
	}
	cancelSlow() // a second cancel is harmless
}

func TestSubscribeConfigRefusesBadInput(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(*Worker) {})
	for _, c := range []SubscribeConfig{
		{Kinds: []EventKind{0}},
		{Kinds: []EventKind{EventCompleted, 1 << 7}},
		{Buffer: -1},
		{Buffer: MaxEventBuffer + 1},
	} {
		if _, _, err := w.SubscribeConfig(c); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%+v: %v, want ErrInvalidConfig", c, err)
		}
	}
	// Subscribe, which returns no error, lets an unknown kind match nothing.
	ch, cancel := w.Subscribe(1 << 7)
	cancel()
	if _, open := <-ch; open {
		t.Fatal("channel open after cancel")
	}
}

// A job that finishes while nobody subscribes builds no event.
func TestEventsUnsubscribedCostNothing(t *testing.T) {
	e := newEnv(t, quick.Options{})
	w := e.newWorker(Config{}, func(*Worker) {})
	r := newRunner(w, "ev", HandlerOptions{Concurrency: 1}, nil)
	st := r.newState(quick.Lease{ID: quick.NewID(epoch), Attempt: 1})
	allocs := testing.AllocsPerRun(100, func() { st.emit(EventCompleted, "", 0) })
	if allocs != 0 {
		t.Fatalf("%v allocations per unsubscribed event, want 0", allocs)
	}
}

// Runs in short-job mode (acked under their lane's lease) send their
// events too.
func TestEventsShortJobs(t *testing.T) {
	e := newEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"ev": {ShortJobs: true}}})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "ev", eventsHandler(e), HandlerOptions{Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	})
	events, cancel := w.Subscribe()
	defer cancel()
	ids := map[quick.ID]EventKind{}
	for p, k := range map[string]EventKind{"ok": EventCompleted, "fail": EventFailed, "cancel": EventCancelled} {
		ids[e.enqueue(quick.NewJob{TaskType: "ev", Payload: []byte(p)})[0].ID] = k
	}
	e.start(w)
	for len(ids) > 0 {
		ev := recv(e, "a short job's event", events)
		if want, ok := ids[ev.ID]; !ok || ev.Kind != want {
			t.Fatalf("event %+v, want kind %v", ev, want)
		}
		delete(ids, ev.ID)
	}
}
