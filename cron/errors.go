package cron

import (
	"errors"
	"fmt"
)

// Sentinels. Every error for bad input is returned before anything is
// written.
var (
	// ErrInvalidSpec is wrapped by every *SpecError: the spec or time zone
	// does not parse, or never fires.
	ErrInvalidSpec = errors.New("cron: invalid schedule spec")
	// ErrInvalidSchedule is returned for a schedule that is bad in another
	// way: an empty name or task type, an unknown priority or policy, a
	// payload too large for a job.
	ErrInvalidSchedule = errors.New("cron: invalid schedule")
	// ErrNotFound is returned by Remove for a name that has no schedule.
	ErrNotFound = errors.New("cron: schedule not found")
	// ErrCorrupt is wrapped by every decoding error: a stored definition or
	// an occurrence payload that does not decode.
	ErrCorrupt = errors.New("cron: corrupt value")
	// ErrCompletionOrder means the transaction that completes an occurrence
	// had not completed it yet when the successor was enqueued: the
	// occurrence still held the schedule's unique key, so the successor
	// would have been lost. It is a bug in the caller of completeTx (the
	// handler wrapper), reported rather than breaking the chain silently.
	ErrCompletionOrder = errors.New("cron: successor enqueued before the occurrence was completed in the same transaction")
)

// SpecError says why a spec or time zone was refused.
type SpecError struct {
	Spec     string
	TimeZone string
	// Reason names the problem: "time zone", "spec", "never fires", ...
	Reason string
	// Err is the parser's own error, if any.
	Err error
}

func (e *SpecError) Error() string {
	s := fmt.Sprintf("cron: invalid schedule spec %q", e.Spec)
	if e.TimeZone != "" {
		s += fmt.Sprintf(" (time zone %q)", e.TimeZone)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is match ErrInvalidSpec and the parser's error.
func (e *SpecError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidSpec}
	}
	return []error{ErrInvalidSpec, e.Err}
}
