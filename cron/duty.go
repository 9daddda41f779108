package cron

import (
	"context"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// RepairDuty is Repair as a worker duty: add it to the workers that run cron
// handlers (w.AddDuty(cron.RepairDuty(w.Queue(), 0))) and exactly one of
// them restores broken chains every period (default 5 minutes), its last
// pass shown by `quick stats`.
func RepairDuty(q *quick.Queue, every time.Duration) worker.Duty {
	if every <= 0 {
		every = 5 * time.Minute
	}
	return worker.Duty{Name: "cron-repair", Every: every, Run: func(ctx context.Context) (worker.DutyReport, error) {
		n, err := Repair(ctx, q)
		return worker.DutyReport{Count: int64(n), Detail: "broken cron chains restored"}, err
	}}
}
