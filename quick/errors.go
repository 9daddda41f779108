package quick

import (
	"errors"
	"fmt"
)

// Sentinels for bad input. Every one is returned before anything is written.
var (
	ErrInvalidTaskType = errors.New("quick: invalid task type")
	ErrPayloadTooLarge = errors.New("quick: payload too large")
	ErrInvalidDelay    = errors.New("quick: invalid delay")
	ErrInvalidPriority = errors.New("quick: invalid priority")
	ErrInvalidLease    = errors.New("quick: invalid lease duration")
	ErrInvalidID       = errors.New("quick: invalid job ID")
	ErrInvalidOption   = errors.New("quick: invalid option")
	ErrTooLarge        = errors.New("quick: value too large")
)

// ErrSchema1 is returned by Open for a queue that holds jobs of the removed
// schema-1 layout (schedule keys under S (1, "s")): no release ever wrote
// them, and nothing reads them any more, so Open refuses rather than leave
// them unseen. Drain the queue with a build that still has schema 1, or
// clear its subspace.
var ErrSchema1 = errors.New("quick: the queue holds jobs of the removed schema-1 layout")

// ErrNotFound is returned for a job ID the queue does not hold.
var ErrNotFound = errors.New("quick: job not found")

// ErrLeaseLost is wrapped by every LeaseLostError: the job's key moved or
// another lease token holds it, so this holder may no longer change it.
var ErrLeaseLost = errors.New("quick: lease lost")

// LeaseLostError says why a lease operation found its lease gone.
type LeaseLostError struct {
	ID     ID
	Reason string // "moved": the key is gone (claimed by another, cancelled, completed); "token": another lease holds it
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("quick: lease lost on job %s (%s)", e.ID, e.Reason)
}

func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// IsLeaseLost reports whether err means the lease was lost.
func IsLeaseLost(err error) bool { return errors.Is(err, ErrLeaseLost) }
