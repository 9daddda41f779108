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

// ErrConfigMismatch means Options disagree with what the queue stored when
// it was created (its lane count): producers and workers must agree, so
// Open refuses rather than drift. Open with Lanes 0 to adopt the stored one.
var ErrConfigMismatch = errors.New("quick: options disagree with the stored queue config")

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
