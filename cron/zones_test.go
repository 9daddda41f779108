package cron

import (
	"context"
	"errors"
	"testing"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/quick"
)

// cron finds its occurrences by ID, which an Untracked task type's jobs do
// not allow: Register refuses such a type, writing nothing, and a tracked
// one's chain is alive.
func TestRegisterRefusesUntracked(t *testing.T) {
	ctx := context.Background()
	db, space := fdbtest.Open(t)
	q, err := quick.Open(ctx, db, space, quick.Options{
		Clock:     clock.NewFake(epoch),
		TaskTypes: map[string]quick.TaskTypeOptions{"sweep": {Untracked: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = Register(ctx, q, Schedule{Name: "sweep", Spec: "*/5 * * * *", TaskType: "sweep"})
	if !errors.Is(err, ErrInvalidSchedule) {
		t.Fatalf("Register of an Untracked type = %v, want ErrInvalidSchedule", err)
	}
	if err := Register(ctx, q, Schedule{Name: "report", Spec: "*/5 * * * *", TaskType: "report"}); err != nil {
		t.Fatal(err)
	}
	es, err := List(ctx, q)
	if err != nil || len(es) != 1 || es[0].Name != "report" || !es[0].Alive {
		t.Fatalf("List = %+v, %v; want the report chain alive", es, err)
	}
}
