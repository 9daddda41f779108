package cron_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// Declare recurring jobs on the worker: every process that runs them makes
// the same call before Run, and the schedules are stored once.
func ExamplePeriodic() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := quick.Open(ctx, memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"app"}), quick.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	w, err := worker.New(worker.Config{Queue: q})
	if err != nil {
		panic(err)
	}
	err = cron.Periodic(ctx, w,
		cron.PeriodicJob{
			Schedule: cron.Schedule{Name: "nightly-report", Spec: "0 2 * * *", TimeZone: "Europe/Paris"},
			Handler: func(ctx context.Context, occ cron.Occurrence) error {
				fmt.Println("report for", occ.ScheduledAt)
				return nil
			},
		},
		cron.PeriodicJob{
			Schedule: cron.Schedule{Name: "sweep", Spec: "@every 5m", TaskType: "sweep"},
			Handler:  func(context.Context, cron.Occurrence) error { return nil },
			Options:  worker.HandlerOptions{Timeout: time.Minute},
		},
	)
	if err != nil {
		panic(err)
	}
	entries, _ := cron.List(ctx, q)
	for _, e := range entries {
		fmt.Println(e.Name, e.TaskType, e.Next.UTC().Format(time.RFC3339))
	}
	// w.Run(ctx) would now run them, and repair their chains.

	// Output:
	// nightly-report nightly-report 2030-01-01T01:00:00Z
	// sweep sweep 2030-01-01T00:05:00Z
}

// CleanupArgs are the typed arguments of a periodic job.
type CleanupArgs struct {
	OlderThanDays int `json:"older_than_days"`
}

func (CleanupArgs) Kind() string { return "cleanup" }

// A periodic job with typed args, as worker.Register has: named after the
// args' kind, its args stored with the schedule and decoded for each run.
func ExampleNewPeriodicJob() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := quick.Open(ctx, memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"app"}), quick.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	w, err := worker.New(worker.Config{Queue: q})
	if err != nil {
		panic(err)
	}
	err = cron.Periodic(ctx, w, cron.NewPeriodicJob(
		cron.Schedule{Spec: "@daily"},
		CleanupArgs{OlderThanDays: 30},
		func(ctx context.Context, run *cron.Run[CleanupArgs]) error {
			fmt.Println("cleanup older than", run.Args.OlderThanDays, "days, for", run.ScheduledAt)
			return nil
		},
		worker.HandlerOptions{},
	))
	if err != nil {
		panic(err)
	}
	entries, _ := cron.List(ctx, q)
	for _, e := range entries {
		fmt.Println(e.Name, e.TaskType, string(e.Payload), e.Next.UTC().Format(time.RFC3339))
	}
	// Output:
	// cleanup cleanup {"older_than_days":30} 2030-01-02T00:00:00Z
}
