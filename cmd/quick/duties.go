package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// printDuties lists the workers' background duties (worker.Duty): the last
// pass of each, who ran it and what it removed. Nothing when none ran yet.
// The JSON form of a duty is worker.DutyState.
func printDuties(ctx context.Context, out io.Writer, q *quick.Queue) error {
	duties, err := worker.DutyStates(ctx, q)
	if err != nil || len(duties) == 0 {
		return err
	}
	fmt.Fprintln(out)
	tw := newTable(out)
	row(tw, "DUTY", "LAST RUN", "BY", "RESULT", "NEXT")
	for _, d := range duties {
		last, result := "never", "-"
		if !d.LastEnd.IsZero() {
			last = d.LastEnd.UTC().Format(time.RFC3339)
			result = d.Last.Detail
			if d.Last.Count >= 0 {
				result = fmt.Sprintf("%d %s", d.Last.Count, d.Last.Detail)
			}
		}
		if d.LastError != "" {
			result = "error: " + d.LastError
		}
		row(tw, d.Name, last, d.LastBy, result, d.Next.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
