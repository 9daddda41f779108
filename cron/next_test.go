package cron_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/cron"
)

func TestNextTimes(t *testing.T) {
	at := time.Date(2030, 1, 1, 10, 7, 0, 0, time.UTC)
	got, err := cron.NextTimes(cron.Schedule{Spec: "*/15 * * * *"}, at, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{at.Add(8 * time.Minute), at.Add(23 * time.Minute), at.Add(38 * time.Minute)}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if got, _ := cron.NextTimes(cron.Schedule{Spec: "@every 1s"}, at, 1000); len(got) != cron.MaxNextTimes {
		t.Fatalf("asked 1000: got %d, want the cap %d", len(got), cron.MaxNextTimes)
	}
	if _, err := cron.NextTimes(cron.Schedule{Spec: "nonsense"}, at, 1); !errors.Is(err, cron.ErrInvalidSpec) {
		t.Fatalf("bad spec: err %v, want ErrInvalidSpec", err)
	}
	if _, err := cron.NextTimes(cron.Schedule{Spec: "@hourly"}, at, 0); !errors.Is(err, cron.ErrInvalidSchedule) {
		t.Fatalf("n=0: err %v, want ErrInvalidSchedule", err)
	}
}
