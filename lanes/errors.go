package lanes

import "errors"

// Sentinels. Errors returned by this package wrap them (and the storage
// errors of package kv) with %w; test with errors.Is.
var (
	// ErrNotJoined is returned by Beat and Leave on a Tracker that has not
	// joined, or has left.
	ErrNotJoined = errors.New("lanes: tracker has not joined")
	// ErrInvalid is returned for an unusable argument: an empty task type or
	// worker ID, or a lane count below 1.
	ErrInvalid = errors.New("lanes: invalid argument")
	// ErrBadInfo is returned when a member's info record cannot be decoded.
	// Observers log it and keep the member: liveness does not depend on it.
	ErrBadInfo = errors.New("lanes: malformed member info")
)
