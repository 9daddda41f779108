package quick

import (
	"testing"
	"time"
)

// Issue 22, item 2: the enqueue marker says exactly which jobs its
// transactions stored, so a later call that repeats an ID loses none of its
// other jobs, and a job that was not stored is never taken for one that was.

func (e *zenv) laneIDs(t *testing.T) map[ID]int {
	t.Helper()
	ks, _ := e.laneKeys(t, e.lane0("email", ""))
	out := map[ID]int{}
	for _, k := range ks {
		out[k.ID]++
	}
	return out
}

func TestZoneEnqueueRepeatingAnIDStoresTheOthers(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1}, nil)
	a, b := NewID(e.clk.Now()), NewID(e.clk.Now())
	if _, err := e.q.Enqueue(e.ctx, NewJob{ID: a, TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.q.Enqueue(e.ctx, NewJob{ID: a, TaskType: "email"}, NewJob{ID: b, TaskType: "email"}, NewJob{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate || res[1].Duplicate || res[2].Duplicate {
		t.Fatalf("results %+v; want only the repeated ID a duplicate", res)
	}
	ids := e.laneIDs(t)
	if len(ids) != 3 || ids[a] != 1 || ids[b] != 1 || ids[res[2].ID] != 1 {
		t.Fatalf("stored %v; want a, b and the job given no ID, once each", ids)
	}
	// The same call again: all three are duplicates now, and nothing is
	// stored twice.
	res, err = e.q.Enqueue(e.ctx, NewJob{ID: a, TaskType: "email"}, NewJob{ID: b, TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate || !res[1].Duplicate {
		t.Fatalf("repeated call %+v; want both duplicates", res)
	}
	if ids := e.laneIDs(t); len(ids) != 3 {
		t.Fatalf("stored %v after repeating the call", ids)
	}
}

func TestZoneEnqueueMarksOnlyTheJobsItStored(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1}, nil)
	held, err := e.q.Enqueue(e.ctx, NewJob{TaskType: "email", UniqueKey: "u"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := NewID(e.clk.Now()), NewID(e.clk.Now())
	res, err := e.q.Enqueue(e.ctx, NewJob{ID: a, TaskType: "email", UniqueKey: "u"}, NewJob{ID: b, TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate || res[0].ID != held[0].ID || res[1].Duplicate {
		t.Fatalf("results %+v; want a a duplicate of the key's holder %s, b stored", res, held[0].ID)
	}
	// The holder completes: the key is free, and a (never stored) is
	// enqueued for real.
	c, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: 10, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range c.Jobs {
		if l.ID == held[0].ID {
			if err := e.q.Complete(e.ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err = e.q.Enqueue(e.ctx, NewJob{ID: a, TaskType: "email", UniqueKey: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Duplicate || res[0].ID != a {
		t.Fatalf("enqueueing a once its key is free: %+v; want it stored", res)
	}
	if ids := e.laneIDs(t); ids[a] != 1 {
		t.Fatalf("stored %v; want a once", ids)
	}
}
