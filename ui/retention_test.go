package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

// A job kept by its retention shows as cancelled, with when it finished and
// until when it is kept, not as gone (issue 26).
func TestJobPageOfARetainedCancelledJob(t *testing.T) {
	f := newFixture(t, ui.Config{})
	res, err := f.q.Enqueue(f.ctx, quick.NewJob{TaskType: "email", Payload: []byte("hi"), Retain: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].ID
	if err := f.q.Cancel(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	r := f.get("/jobs/" + id.String())
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	for _, want := range []string{"st-cancelled", "finished (cancelled) at 2030-01-01 12:00:00.000Z", "kept until 2030-01-01 13:00:00.000Z"} {
		if !strings.Contains(r.body, want) {
			t.Fatalf("job page lacks %q:\n%s", want, r.body)
		}
	}
	if strings.Contains(r.body, "Cancel job") {
		t.Fatalf("a cancelled job offers to be cancelled:\n%s", r.body)
	}
}
