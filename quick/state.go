package quick

import "fmt"

// State is where a job stands.
type State int

// The states a job can be in.
const (
	// StateScheduled: vests in the future, not leased.
	StateScheduled State = iota + 1
	// StateReady: vested and waiting for a worker (including a job whose
	// lease lapsed).
	StateReady
	// StateLeased: a worker holds a live lease.
	StateLeased
	// StateDead: in the dead letters.
	StateDead
	// StateFinished: the job is gone (completed or cancelled) and was not
	// retained, but its enqueue marker is still kept.
	StateFinished
	// StateCompleted: its handler completed it, and its finished record is
	// kept for its retention (TaskTypeOptions.Retain, NewJob.Retain).
	StateCompleted
	// StateCancelled: it was cancelled (Cancel, CancelMatching, AckCancel,
	// worker.Cancel) and its finished record is kept for its retention.
	// A cancelled job is never a dead letter.
	StateCancelled
)

func (s State) String() string {
	switch s {
	case StateScheduled:
		return "scheduled"
	case StateReady:
		return "ready"
	case StateLeased:
		return "leased"
	case StateDead:
		return "dead"
	case StateFinished:
		return "finished"
	case StateCompleted:
		return "completed"
	case StateCancelled:
		return "cancelled"
	}
	return "unknown"
}

// Done reports whether a job in state s has finished for good: finished,
// completed or cancelled (a dead letter can still be requeued).
func (s State) Done() bool {
	return s == StateFinished || s == StateCompleted || s == StateCancelled
}

// ParseState reads a state name.
func ParseState(s string) (State, error) {
	for st := StateScheduled; st <= StateCancelled; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown state %q (want scheduled, ready, leased, dead, finished, completed or cancelled)", ErrInvalidOption, s)
}

// stateOf is a job's state from its key's vesting time and its value. A
// job handed out in short-job mode keeps a vested key with no token: it
// shows as ready while the lane lease covers it.
func stateOf(v *zjobValue, vestMs, nowMs int64) State {
	switch {
	case vestMs > nowMs && v.Token != 0:
		return StateLeased
	case vestMs > nowMs:
		return StateScheduled
	}
	return StateReady
}
