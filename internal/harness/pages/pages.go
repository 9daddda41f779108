// Package pages reads every page of a task type's jobs or dead letters, for
// the harnesses' final checks (soak, chaos), where the whole outcome is
// read once at the end; library code pages with a budget instead.
package pages

import (
	"context"

	"github.com/quickfdb/quickfdb/quick"
)

// Queued returns the IDs of tt's jobs still queued, reading them 1,000 at a
// time (quick.Queue.List).
func Queued(ctx context.Context, q *quick.Queue, tt string) ([]quick.ID, error) {
	return all(func(after quick.Cursor) ([]quick.JobInfo, quick.Cursor, error) {
		p, err := q.List(ctx, quick.ListOptions{TaskType: tt, Limit: 1000, After: after})
		return p.Jobs, p.Next, err
	})
}

// Dead returns the IDs of tt's dead letters, reading them 1,000 at a time
// (quick.Queue.ListDead).
func Dead(ctx context.Context, q *quick.Queue, tt string) ([]quick.ID, error) {
	return all(func(after quick.Cursor) ([]quick.JobInfo, quick.Cursor, error) {
		p, err := q.ListDead(ctx, quick.ListDeadOptions{TaskType: tt, Limit: 1000, After: after})
		return p.Jobs, p.Next, err
	})
}

func all(page func(quick.Cursor) ([]quick.JobInfo, quick.Cursor, error)) ([]quick.ID, error) {
	var out []quick.ID
	var after quick.Cursor
	for {
		jobs, next, err := page(after)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}
