package cron

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func TestRegisterRefusesBadInputWritingNothing(t *testing.T) {
	e := newEnv(t, nil)
	good := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep"}
	bad := []struct {
		name   string
		change func(*Schedule)
		want   error
	}{
		{"bad spec", func(s *Schedule) { s.Spec = "* * *" }, ErrInvalidSpec},
		{"bad zone", func(s *Schedule) { s.TimeZone = "Atlantis/Capital" }, ErrInvalidSpec},
		{"never fires", func(s *Schedule) { s.Spec = "0 0 31 4 *" }, ErrInvalidSpec},
		{"empty name", func(s *Schedule) { s.Name = "" }, ErrInvalidSchedule},
		{"empty task type", func(s *Schedule) { s.TaskType = "" }, ErrInvalidSchedule},
		{"bad priority", func(s *Schedule) { s.Priority = 9 }, ErrInvalidSchedule},
		{"bad policy", func(s *Schedule) { s.MissedRuns = 7 }, ErrInvalidSchedule},
		{"payload too large", func(s *Schedule) { s.Payload = make([]byte, quick.MaxPayloadSize) }, quick.ErrPayloadTooLarge},
	}
	before := e.db.Stats()
	for _, c := range bad {
		s := good
		c.change(&s)
		if err := Register(e.ctx, e.q, s); !errors.Is(err, c.want) {
			t.Errorf("%s: Register = %v, want %v", c.name, err, c.want)
		}
	}
	if d := e.db.Stats().Sub(before); d.Mutations != 0 || d.Commits != 0 {
		t.Fatalf("refused registrations wrote: %+v", d)
	}
	if es, err := List(e.ctx, e.q); err != nil || len(es) != 0 {
		t.Fatalf("List = %+v, %v; want nothing", es, err)
	}
}

func TestRegisterIsIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "*/5 * * * *", TaskType: "sweep", Payload: []byte("p")}
	e.register(s)
	info, env := e.pending("sweep")
	if want := epoch.Add(5 * time.Minute); !env.ScheduledAt.Equal(want) || !info.RunAt.Equal(want) || info.UniqueKey != "cron:sweep" {
		t.Fatalf("first occurrence %+v (%v), want at %v with unique key cron:sweep", info, env.ScheduledAt, want)
	}
	before := e.db.Stats()
	e.clk.Advance(time.Minute) // a later register (another process starting) changes nothing either
	e.register(s)
	s.Priority = quick.Normal // the default, spelled out: the same schedule
	e.register(s)
	if d := e.db.Stats().Sub(before); d.Mutations != 0 || d.Commits != 0 {
		t.Fatalf("registering an unchanged schedule wrote: %+v", d)
	}
	if again, _ := e.pending("sweep"); again.ID != info.ID {
		t.Fatalf("occurrence changed from %s to %s", info.ID, again.ID)
	}
	en := e.entry("sweep")
	if !en.Alive || en.NextID != info.ID || !en.Next.Equal(env.ScheduledAt) || en.State != quick.StateScheduled || en.Err != nil {
		t.Fatalf("List entry %+v", en)
	}
}

func TestRegisterChangeReplacesPendingOccurrence(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "*/5 * * * *", TaskType: "sweep", Payload: []byte("v1")}
	e.register(s)
	first, _ := e.pending("sweep")

	// Same next time, new payload: a new occurrence (new generation, so a
	// new ID, not the cancelled one's enqueue marker).
	s.Payload = []byte("v2")
	e.register(s)
	second, env := e.pending("sweep")
	if second.ID == first.ID || string(env.Payload) != "v2" || !env.ScheduledAt.Equal(epoch.Add(5*time.Minute)) {
		t.Fatalf("after a payload change: %s %+v, first was %s", second.ID, env, first.ID)
	}
	// Cancelled: gone (a cancelled job leaves no key; only a waitable one
	// leaves its outcome).
	if old, err := e.q.Get(e.ctx, first.ID); !quick.IsNotFound(err) && (err != nil || old.State != quick.StateFinished) {
		t.Fatalf("old occurrence: %+v, %v; want cancelled (gone)", old, err)
	}

	// New spec and task type.
	s.Spec, s.TaskType = "*/2 * * * *", "sweep2"
	e.register(s)
	if js := e.jobs("sweep"); len(js) != 0 {
		t.Fatalf("old task type still has %+v", js)
	}
	_, env = e.pending("sweep2")
	if !env.ScheduledAt.Equal(epoch.Add(2 * time.Minute)) {
		t.Fatalf("new occurrence at %v", env.ScheduledAt)
	}
}

func TestRegisterChangeWhileRunning(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep", Payload: []byte("v1")}
	e.register(s)
	e.clk.Advance(time.Minute)
	ls := e.claim("sweep", "w1")
	if len(ls) != 1 {
		t.Fatalf("claimed %d", len(ls))
	}
	s.Spec, s.Payload = "*/10 * * * *", []byte("v2")
	e.register(s)
	// The running occurrence keeps the unique key: nothing else is pending.
	if info, _ := e.pending("sweep"); info.ID != ls[0].ID || info.State != quick.StateLeased {
		t.Fatalf("pending %+v, want the leased %s", info, ls[0].ID)
	}
	if err := e.finish(ls[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	_, env := e.pending("sweep")
	if !env.ScheduledAt.Equal(epoch.Add(10*time.Minute)) || string(env.Payload) != "v2" {
		t.Fatalf("successor %+v, want the new schedule's next at %v", env, epoch.Add(10*time.Minute))
	}
}

func TestRemoveStopsTheChain(t *testing.T) {
	e := newEnv(t, nil)
	s := Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep"}
	e.register(s)
	first, _ := e.pending("sweep")
	if err := Remove(e.ctx, e.q, "sweep"); err != nil {
		t.Fatal(err)
	}
	if js := e.jobs("sweep"); len(js) != 0 {
		t.Fatalf("jobs after Remove: %+v", js)
	}
	if err := Remove(e.ctx, e.q, "sweep"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove = %v, want ErrNotFound", err)
	}

	// Registered again in the same minute: the same time, but a new
	// generation, so not the cancelled occurrence's ID.
	e.register(s)
	again, _ := e.pending("sweep")
	if again.ID == first.ID {
		t.Fatal("re-registered schedule reused the cancelled occurrence's ID")
	}

	// Removed while its occurrence runs: it finishes, and schedules nothing.
	e.clk.Advance(time.Minute)
	ls := e.claim("sweep", "w1")
	if err := Remove(e.ctx, e.q, "sweep"); err != nil {
		t.Fatal(err)
	}
	if info, _ := e.pending("sweep"); info.State != quick.StateLeased {
		t.Fatalf("Remove touched the running occurrence: %+v", info)
	}
	if err := e.finish(ls[0], quick.AckComplete, "", nil); err != nil {
		t.Fatal(err)
	}
	if js := e.jobs("sweep"); len(js) != 0 {
		t.Fatalf("a removed schedule's completion scheduled %+v", js)
	}
}

func TestDeterministicIDs(t *testing.T) {
	window := time.Hour
	at := epoch.Add(time.Minute)
	a := occurrenceID("sweep", 7, at, epoch, window)
	if a != occurrenceID("sweep", 7, at, epoch.Add(time.Second), window) {
		t.Fatal("the same occurrence got two IDs")
	}
	if !a.Time().Equal(at) {
		t.Fatalf("ID time %v, want the scheduled time %v", a.Time(), at)
	}
	for _, other := range []quick.ID{
		occurrenceID("sweep", 8, at, epoch, window),
		occurrenceID("sweep2", 7, at, epoch, window),
		occurrenceID("sweep", 7, at.Add(time.Minute), epoch, window),
	} {
		if other == a {
			t.Fatal("different occurrences share an ID")
		}
	}
	// An occurrence far in the past (RunOnce after a long outage) takes
	// now's time, which quick accepts.
	late := occurrenceID("sweep", 7, at, at.Add(48*time.Hour), window)
	if !late.Time().Equal(at.Add(48 * time.Hour)) {
		t.Fatalf("late ID time %v", late.Time())
	}

	// What Register enqueues is that ID.
	e := newEnv(t, nil)
	e.register(Schedule{Name: "sweep", Spec: "* * * * *", TaskType: "sweep"})
	info, env := e.pending("sweep")
	if want := occurrenceID("sweep", env.Gen, env.ScheduledAt, epoch, e.q.Options().IdempotencyWindow); info.ID != want {
		t.Fatalf("enqueued %s, want %s", info.ID, want)
	}
}

// TestRegisterUnderFaults registers, changes and removes schedules on a
// database that fails commits, and checks the outcome is as without faults.
func TestRegisterUnderFaults(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		registerUnderFaults(t, seed)
	}
}

func registerUnderFaults(t *testing.T, seed uint64) {
	var faulty *kv.FaultyDB
	e := newEnv(t, func(db kv.Database) kv.Database {
		faulty = kv.WithFaults(db, kv.Faults{Seed: seed, UnknownCommitted: 0.2, UnknownNotCommitted: 0.1, Conflict: 0.1})
		return faulty
	})
	for i := 0; i < 30; i++ {
		s := Schedule{Name: "sweep", Spec: []string{"* * * * *", "*/5 * * * *"}[i%2], TaskType: "sweep", Payload: []byte{byte(i)}}
		e.register(s)
		e.register(s)
		if i%5 == 4 {
			if err := Remove(e.ctx, e.q, "sweep"); err != nil {
				t.Fatalf("seed %d round %d: Remove: %v", seed, i, err)
			}
			if js := e.jobs("sweep"); len(js) != 0 {
				t.Fatalf("seed %d round %d: jobs after Remove: %+v", seed, i, js)
			}
			continue
		}
		if _, env := e.pending("sweep"); env.Payload[0] != byte(i) {
			t.Fatalf("seed %d round %d: pending occurrence has payload %v", seed, i, env.Payload)
		}
	}
	if st := faulty.Stats(); st.UnknownCommitted == 0 {
		t.Fatalf("no faults injected: %+v", st)
	}
}
