package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/quickfdb/quickfdb/quick"
)

// errUnknownTaskType is a --type naming a task type the queue has never
// seen: a typo, most often, which must not read as "zero jobs".
var errUnknownTaskType = errors.New("unknown task type")

// checkTypes returns an error naming the first of types the queue does not
// know (no job of it was ever enqueued), with the types it knows.
// Cost: one point read per type (quick.HasTaskType); only on an unknown
// type one range read over the task type registry (one key per type).
func checkTypes(ctx context.Context, q *quick.Queue, types ...string) error {
	for _, t := range types {
		if t == "" {
			continue // refused by the library with its own message
		}
		ok, err := q.HasTaskType(ctx, t)
		if err != nil {
			return fmt.Errorf("look up task type %q: %w", t, err)
		}
		if ok {
			continue
		}
		known, err := q.TaskTypes(ctx)
		if err != nil {
			return fmt.Errorf("list task types: %w", err)
		}
		if len(known) == 0 {
			return fmt.Errorf("%w %q: nothing was ever enqueued in this queue (wrong --subspace?)", errUnknownTaskType, t)
		}
		shown := known[:min(len(known), 10)]
		more := ""
		if len(known) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(known)-len(shown))
		}
		return fmt.Errorf("%w %q: no job of it was ever enqueued (known: %s%s)", errUnknownTaskType, t, strings.Join(shown, ", "), more)
	}
	return nil
}
