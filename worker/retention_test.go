package worker

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A retained type's completed and cancelled jobs stay visible until their
// retention ends; then the built-in purge-finished duty deletes them, with
// no caller.
func TestBuiltinDutyPurgesFinishedRecords(t *testing.T) {
	e := newEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"kept": {Retain: 5 * time.Minute}}})
	w := e.newWorker(Config{}, func(w *Worker) {
		if err := RegisterRaw(w, "kept", func(ctx context.Context, j *RawJob) error {
			if string(j.Args) == "no" {
				return Cancel("not wanted")
			}
			return nil
		}, HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	res := e.enqueue(quick.NewJob{TaskType: "kept", Payload: []byte("ok")}, quick.NewJob{TaskType: "kept", Payload: []byte("no")})
	e.start(w)
	e.waitFor("both jobs finished", func() bool { s := w.Stats(); return s.Completed == 1 && s.Cancelled == 1 })
	e.settle(w)
	if st := e.get(res[0].ID).State; st != quick.StateCompleted {
		t.Fatalf("completed job is %v, want completed", st)
	}
	if j := e.get(res[1].ID); j.State != quick.StateCancelled || j.LastError != "not wanted" {
		t.Fatalf("cancelled job %+v", j)
	}
	// Past the retention and two duty periods.
	e.step(25*time.Minute, time.Minute, w)
	for _, r := range res {
		if _, err := e.q.Get(e.ctx, r.ID); !quick.IsNotFound(err) {
			t.Fatalf("job %s after its retention: %v, want not found", r.ID, err)
		}
	}
	sts, err := DutyStates(e.ctx, e.q)
	if err != nil {
		t.Fatal(err)
	}
	var runs int64
	for _, st := range sts {
		if st.Name == "purge-finished" {
			if st.Runs == 0 || st.LastError != "" {
				t.Fatalf("purge-finished record %+v", st)
			}
			runs = st.Runs
		}
	}
	if runs == 0 {
		t.Fatalf("no purge-finished duty in %+v", sts)
	}
}
