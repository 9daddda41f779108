package quick_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TestLookupByIDFindsEveryZonesJob: on a zones queue with tenants and no
// task type options, Get, RunNow, Cancel, Outcome and Wait find any
// pending job by ID (tracking is the default); an Untracked type's are not
// found, and say why.
func TestLookupByIDFindsEveryZonesJob(t *testing.T) {
	e := newEnv(t, quick.Options{ZoneLanes: 2,
		TaskTypes: map[string]quick.TaskTypeOptions{"bulk": {Untracked: true}}})
	var ids []quick.ID
	for _, ts := range testTenants {
		res := e.enqueue(t,
			quick.NewJob{TaskType: "email", ItemSpace: ts, Waitable: true},
			quick.NewJob{TaskType: "email", ItemSpace: ts, Delay: time.Hour},
		)
		ids = append(ids, res[0].ID, res[1].ID)
		for i, r := range res {
			info, err := e.q.Get(e.ctx, r.ID)
			if err != nil || info.ItemSpace != ts || info.TaskType != "email" {
				t.Fatalf("Get %d of tenant %q: %+v %v", i, ts, info, err)
			}
		}
	}
	// Outcome and Wait on a pending job: pending, not "not found".
	if o, err := e.q.Outcome(e.ctx, ids[2]); err != nil || o.Kind != quick.OutcomePending {
		t.Fatalf("Outcome of a pending zones job: %+v %v", o, err)
	}
	if _, err := e.q.Wait(e.ctx, ids[3]); !errors.Is(err, quick.ErrNotWaitable) {
		t.Fatalf("Wait on a pending job that is not waitable: %v", err)
	}
	ch := waitAsync(t, e, ids[2])
	// RunNow and Cancel by ID, in another tenant.
	if err := e.q.RunNow(e.ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	if info, err := e.q.Get(e.ctx, ids[5]); err != nil || info.State != quick.StateReady {
		t.Fatalf("after RunNow: %+v %v", info, err)
	}
	if err := e.q.Cancel(e.ctx, ids[7]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Get(e.ctx, ids[7]); !quick.IsNotFound(err) {
		t.Fatalf("Get after Cancel: %v", err)
	}
	// Work every ready job: the waiter wakes with the completion.
	for range 20 {
		c, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Jobs) == 0 {
			break
		}
		for _, l := range c.Jobs {
			if err := e.q.Complete(e.ctx, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o := got(t, ch); o.Kind != quick.OutcomeCompleted {
		t.Fatalf("Wait: %+v, want completed", o)
	}
	// An Untracked type's pending job is not found by ID.
	u := e.enqueue(t, quick.NewJob{TaskType: "bulk", ItemSpace: "acme", Waitable: true})[0].ID
	if _, err := e.q.Get(e.ctx, u); !errors.Is(err, quick.ErrNotTrackable) {
		t.Fatalf("Get of an Untracked job: %v", err)
	}
	if _, err := e.q.Outcome(e.ctx, u); !errors.Is(err, quick.ErrNotTrackable) {
		t.Fatalf("Outcome of an Untracked job: %v", err)
	}
}
